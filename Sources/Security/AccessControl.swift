import KeychainModel
import KeychainCrypto

/// Apple's access-control flags, with Apple's bit values.
public struct SecAccessControlCreateFlags: OptionSet, Sendable {
    public let rawValue: CFOptionFlags
    public init(rawValue: CFOptionFlags) { self.rawValue = rawValue }

    public static let userPresence = SecAccessControlCreateFlags(rawValue: 1 << 0)
    public static let biometryAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    public static let touchIDAny = biometryAny
    public static let biometryCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    public static let touchIDCurrentSet = biometryCurrentSet
    public static let devicePasscode = SecAccessControlCreateFlags(rawValue: 1 << 4)
    public static let watch = SecAccessControlCreateFlags(rawValue: 1 << 5)
    public static let companion = watch
    public static let or = SecAccessControlCreateFlags(rawValue: 1 << 14)
    public static let and = SecAccessControlCreateFlags(rawValue: 1 << 15)
    public static let privateKeyUsage = SecAccessControlCreateFlags(rawValue: 1 << 30)
    public static let applicationPassword = SecAccessControlCreateFlags(rawValue: 1 << 31)
}

/// An access control: a protection class and the conditions for using an item.
public final class SecAccessControl: NSObject, Sendable {
    let control: AccessControl

    init(_ control: AccessControl) { self.control = control }

    public override func isEqual(_ object: Any?) -> Bool { (object as? SecAccessControl)?.control == control }
    public override var hash: Int { Int(truncatingIfNeeded: control.flags) ^ control.protection.rawValue.hashValue }
}

/// Creates an access control (`SecAccessControlCreateWithFlags`).
/// - Returns: nil, with `error` set, for a protection that is not one of Apple's classes.
public func SecAccessControlCreateWithFlags(_ allocator: CFAllocator?, _ protection: CFTypeRef,
                                            _ flags: SecAccessControlCreateFlags,
                                            _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecAccessControl? {
    let name = (protection as? NSString).map { $0 as String } ?? (protection as? String)
    guard let name, let p = ProtectionClass(rawValue: name) else {
        // Apple's reason (SecAccessControl.c), the protection as given.
        setError(error, errSecParam, "SecAccessControl: invalid protection: \(name ?? String(describing: protection))")
        return nil
    }
    return SecAccessControl(AccessControl(protection: p, flags: UInt64(flags.rawValue)))
}

// MARK: Random bytes

public typealias SecRandomRef = OpaquePointer
nonisolated(unsafe) public let kSecRandomDefault: SecRandomRef? = nil

/// Fills `bytes` from libsodium's CSPRNG (`SecRandomCopyBytes`). Returns 0.
public func SecRandomCopyBytes(_ rnd: SecRandomRef?, _ count: Int, _ bytes: UnsafeMutableRawPointer) -> Int32 {
    guard count > 0 else { return 0 }
    let random = KeychainCrypto.randomBytes(count)
    random.withUnsafeBytes { bytes.copyMemory(from: $0.baseAddress!, byteCount: count) }
    return 0
}
