/// An access control (`SecAccessControl`): a protection class and Apple's flag bits. Stored in
/// the item's sealed attributes as the string `PROTECTION;FLAGS` (for example `ak;1`).
public struct AccessControl: Equatable, Sendable {
    public var protection: ProtectionClass
    public var flags: UInt64

    // Apple's SecAccessControlCreateFlags bits.
    public static let userPresence: UInt64 = 1 << 0
    public static let biometryAny: UInt64 = 1 << 1
    public static let biometryCurrentSet: UInt64 = 1 << 3
    public static let devicePasscode: UInt64 = 1 << 4
    public static let companion: UInt64 = 1 << 5
    public static let or: UInt64 = 1 << 14
    public static let and: UInt64 = 1 << 15
    public static let privateKeyUsage: UInt64 = 1 << 30
    public static let applicationPassword: UInt64 = 1 << 31

    public init(protection: ProtectionClass, flags: UInt64) {
        self.protection = protection
        self.flags = flags
    }

    /// Parses the stored form; nil when malformed.
    public init?(_ value: AttributeValue) {
        guard case .string(let s) = value else { return nil }
        let parts = s.split(separator: ";", omittingEmptySubsequences: false)
        guard parts.count == 2, let p = ProtectionClass(rawValue: String(parts[0])), let f = UInt64(parts[1]) else { return nil }
        self.init(protection: p, flags: f)
    }

    public var value: AttributeValue { .string("\(protection.rawValue);\(flags)") }

    /// Reading the secret needs someone to confirm presence (or the passphrase), or an
    /// application password.
    public var requiresPresence: Bool {
        flags & (Self.userPresence | Self.biometryAny | Self.biometryCurrentSet | Self.devicePasscode | Self.companion
                 | Self.applicationPassword) != 0
    }

    /// The approval program can open it: `applicationPassword` asks for the application's own
    /// password, which Apple requires beside the other constraints (also with `.or`) and which
    /// only an `LAContext` carries, so no one on Linux can give it and such an item's secret
    /// is never returned.
    public var approvable: Bool { flags & Self.applicationPassword == 0 }
}
