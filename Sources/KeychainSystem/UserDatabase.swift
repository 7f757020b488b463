import Glibc

/// Users and groups by name and number, as this machine resolves them (NSS: getpwnam(3),
/// getpwuid(3), getgrnam(3), getgrgid(3)). Not safe to call from two threads at once.
public enum UserDatabase {
    /// The uid of the user called `name`; nil when there is none.
    public static func userID(named name: String) -> UInt32? { getpwnam(name)?.pointee.pw_uid }

    /// The name of the user `uid`; nil when the machine does not know it.
    public static func userName(of uid: UInt32) -> String? { getpwuid(uid).map { String(cString: $0.pointee.pw_name) } }

    /// The home directory the password database gives the user `uid`; nil when the machine
    /// does not know the user.
    public static func homeDirectory(of uid: UInt32) -> String? {
        getpwuid(uid)?.pointee.pw_dir.map { String(cString: $0) }
    }

    /// The primary group the password database gives the user `uid`; nil when the machine
    /// does not know the user.
    public static func primaryGroup(of uid: UInt32) -> UInt32? { getpwuid(uid)?.pointee.pw_gid }

    /// The gid of the group called `name`; nil when there is none.
    public static func groupID(named name: String) -> UInt32? { getgrnam(name)?.pointee.gr_gid }

    /// The name of the group `gid`; nil when the machine does not know it.
    public static func groupName(of gid: UInt32) -> String? { getgrgid(gid).map { String(cString: $0.pointee.gr_name) } }
}
