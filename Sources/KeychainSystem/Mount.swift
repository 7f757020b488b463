import Glibc

/// mount(2) and umount2(2), for root.
public enum Mount {
    /// Flags of mount(2).
    public struct Flags: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }

        public static let readOnly = Flags(rawValue: UInt(MS_RDONLY))
        public static let noSetUserID = Flags(rawValue: UInt(MS_NOSUID))
        public static let noDevices = Flags(rawValue: UInt(MS_NODEV))
    }

    /// Mounts a file system of `type` at `target` (mount(2)); `data` is its option string.
    public static func mount(source: String, at target: String, type: String, flags: Flags, data: String) throws(Errno) {
        _ = try systemCall { Glibc.mount(source, target, type, flags.rawValue, data) }
    }

    /// Unmounts `target` (umount2(2)); `detach` (`MNT_DETACH`) takes it out of the tree now
    /// and frees it once nothing uses it, also when busy or its server is dead.
    public static func unmount(_ target: String, detach: Bool) throws(Errno) {
        _ = try systemCall { umount2(target, detach ? Int32(MNT_DETACH) : 0) }
    }
}
