/// Apple's data-protection classes (`kSecAttrAccessible*`), by their raw values.
public enum ProtectionClass: String, CaseIterable, Sendable {
    case whenUnlocked = "ak"
    case afterFirstUnlock = "ck"
    case always = "dk"
    case whenUnlockedThisDeviceOnly = "aku"
    case afterFirstUnlockThisDeviceOnly = "cku"
    case alwaysThisDeviceOnly = "dku"
    case whenPasscodeSetThisDeviceOnly = "akpu"

    /// The class an item gets when `pdmn` is absent.
    public static let `default` = ProtectionClass.whenUnlocked

    /// Apple's constant name without the `kSecAttrAccessible` prefix.
    public var appleName: String {
        switch self {
        case .whenUnlocked: return "WhenUnlocked"
        case .afterFirstUnlock: return "AfterFirstUnlock"
        case .always: return "Always"
        case .whenUnlockedThisDeviceOnly: return "WhenUnlockedThisDeviceOnly"
        case .afterFirstUnlockThisDeviceOnly: return "AfterFirstUnlockThisDeviceOnly"
        case .alwaysThisDeviceOnly: return "AlwaysThisDeviceOnly"
        case .whenPasscodeSetThisDeviceOnly: return "WhenPasscodeSetThisDeviceOnly"
        }
    }

    /// Parses a raw value (`ak`) or Apple's name (`WhenUnlocked`, `kSecAttrAccessibleWhenUnlocked`).
    public init?(name: String) {
        if let raw = ProtectionClass(rawValue: name) { self = raw; return }
        let bare = name.hasPrefix("kSecAttrAccessible") ? String(name.dropFirst(18)) : name
        guard let match = ProtectionClass.allCases.first(where: { $0.appleName.lowercased() == bare.lowercased() })
        else { return nil }
        self = match
    }

    /// The small integer stored in the clear `pdmn` column and in associated data; frozen.
    public var code: UInt8 {
        switch self {
        case .whenUnlocked: return 1
        case .afterFirstUnlock: return 2
        case .always: return 3
        case .whenUnlockedThisDeviceOnly: return 4
        case .afterFirstUnlockThisDeviceOnly: return 5
        case .alwaysThisDeviceOnly: return 6
        case .whenPasscodeSetThisDeviceOnly: return 7
        }
    }

    public init?(code: UInt8) {
        guard let c = ProtectionClass.allCases.first(where: { $0.code == code }) else { return nil }
        self = c
    }

    /// Bound to this machine's device key; never leaves it in a backup or a copied vault.
    public var isThisDeviceOnly: Bool {
        switch self {
        case .whenUnlocked, .afterFirstUnlock, .always: return false
        default: return true
        }
    }

    /// When the class key is available.
    public enum Availability: Sendable { case whileUnlocked, afterFirstUnlock, always }

    public var availability: Availability {
        switch self {
        case .whenUnlocked, .whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly: return .whileUnlocked
        case .afterFirstUnlock, .afterFirstUnlockThisDeviceOnly: return .afterFirstUnlock
        case .always, .alwaysThisDeviceOnly: return .always
        }
    }
}
