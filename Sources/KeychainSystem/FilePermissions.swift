import Glibc

/// The permission bits of a file's mode (`mode_t & 0o7777`).
public struct FilePermissions: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let ownerRead = FilePermissions(rawValue: 0o400)
    public static let ownerWrite = FilePermissions(rawValue: 0o200)
    public static let ownerExecute = FilePermissions(rawValue: 0o100)
    public static let groupRead = FilePermissions(rawValue: 0o040)
    public static let groupWrite = FilePermissions(rawValue: 0o020)
    public static let groupExecute = FilePermissions(rawValue: 0o010)
    public static let otherRead = FilePermissions(rawValue: 0o004)
    public static let otherWrite = FilePermissions(rawValue: 0o002)
    public static let otherExecute = FilePermissions(rawValue: 0o001)
    public static let setUserID = FilePermissions(rawValue: 0o4000)
    public static let setGroupID = FilePermissions(rawValue: 0o2000)
    public static let sticky = FilePermissions(rawValue: 0o1000)

    /// 0600.
    public static let ownerReadWrite: FilePermissions = [.ownerRead, .ownerWrite]
    /// Any of the three execute bits (0111).
    public static let anyExecute: FilePermissions = [.ownerExecute, .groupExecute, .otherExecute]
    /// Write for the group or others (0022).
    public static let groupOrOtherWrite: FilePermissions = [.groupWrite, .otherWrite]

    /// Octal, as `ls -l` users write it: `0600`.
    public var description: String { "0" + String(rawValue, radix: 8) }
}

/// What stat(2) says about a file.
public struct FileStatus: Sendable, Equatable {
    /// The file's type (`st_mode & S_IFMT`).
    public enum Kind: Sendable, Equatable {
        case regular, directory, symbolicLink, socket, characterDevice, blockDevice, fifo, unknown
    }

    public var kind: Kind
    public var permissions: FilePermissions
    public var owner: UInt32
    public var group: UInt32
    public var size: Int64
    /// The device holding the file and its inode there: together they name the file itself,
    /// whatever path reached it (`st_dev`, `st_ino`).
    public var device: UInt64
    public var inode: UInt64

    init(_ st: stat) {
        kind = switch st.st_mode & S_IFMT {
        case S_IFREG: .regular
        case S_IFDIR: .directory
        case S_IFLNK: .symbolicLink
        case S_IFSOCK: .socket
        case S_IFCHR: .characterDevice
        case S_IFBLK: .blockDevice
        case S_IFIFO: .fifo
        default: .unknown
        }
        permissions = FilePermissions(rawValue: st.st_mode & 0o7777)
        owner = st.st_uid
        group = st.st_gid
        size = Int64(st.st_size)
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }

    /// True when both describe the same file: the same inode on the same device (two names
    /// of one file, as link(2) makes them).
    public func isSameFile(as other: FileStatus) -> Bool { device == other.device && inode == other.inode }

    /// A regular file that someone may execute.
    public var isExecutableFile: Bool { kind == .regular && !permissions.isDisjoint(with: .anyExecute) }
}
