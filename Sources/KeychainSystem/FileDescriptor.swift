import CProcess
import Glibc

/// An open file descriptor (swift-system's `FileDescriptor`): its calls throw `Errno` and
/// repeat interrupted calls. It does not close itself; whoever opened it calls `close()`.
public struct FileDescriptor: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let standardInput = FileDescriptor(rawValue: 0)
    public static let standardOutput = FileDescriptor(rawValue: 1)
    public static let standardError = FileDescriptor(rawValue: 2)

    /// How a file is opened for reading and writing (`O_RDONLY`, `O_WRONLY`, `O_RDWR`).
    public struct AccessMode: RawRepresentable, Hashable, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        public static let readOnly = AccessMode(rawValue: O_RDONLY)
        public static let writeOnly = AccessMode(rawValue: O_WRONLY)
        public static let readWrite = AccessMode(rawValue: O_RDWR)
    }

    /// The other flags of open(2). Close-on-exec is not among them: `open` always sets it.
    public struct OpenOptions: OptionSet, Hashable, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        public static let create = OpenOptions(rawValue: O_CREAT)
        /// With `create`: fail with `EEXIST` when the file exists.
        public static let exclusiveCreate = OpenOptions(rawValue: O_EXCL)
        public static let truncate = OpenOptions(rawValue: O_TRUNC)
        public static let append = OpenOptions(rawValue: O_APPEND)
        /// Fail with `ELOOP` when the last component is a symbolic link.
        public static let noFollow = OpenOptions(rawValue: O_NOFOLLOW)
        /// Fail with `ENOTDIR` unless the path is a directory.
        public static let directory = OpenOptions(rawValue: O_DIRECTORY)
        /// A terminal opened does not become the controlling terminal.
        public static let noControllingTerminal = OpenOptions(rawValue: O_NOCTTY)
    }

    /// Opens `path` (open(2)), close-on-exec, so no program this process starts inherits it.
    /// - Parameter permissions: the mode of a file `create` makes (less the umask).
    /// - Throws: the open's `Errno`: `.noSuchFile`, `.fileExists` (`exclusiveCreate`),
    ///   `.tooManySymbolicLinks` (`noFollow` on a link), `.permissionDenied`, ...
    public static func open(_ path: String, _ mode: AccessMode, options: OpenOptions = [],
                            permissions: FilePermissions = []) throws(Errno) -> FileDescriptor {
        let flags = mode.rawValue | options.rawValue | O_CLOEXEC
        return FileDescriptor(rawValue: try systemCall { Glibc.open(path, flags, permissions.rawValue) })
    }

    /// A pipe (pipe2(2), through CProcess), both ends close-on-exec: a child gets an end only by `duplicate`.
    /// - Throws: the `Errno` pipe2 gave (EMFILE, ENFILE).
    public static func pipe() throws(Errno) -> (read: FileDescriptor, write: FileDescriptor) {
        var ends: [Int32] = [-1, -1]
        _ = try systemCall { kcfs_pipe_cloexec(&ends) }
        return (FileDescriptor(rawValue: ends[0]), FileDescriptor(rawValue: ends[1]))
    }

    /// Makes `target` a copy of this descriptor (dup2(2)), closing what `target` was.
    public func duplicate(onto target: Int32) throws(Errno) {
        _ = try systemCall { dup2(rawValue, target) }
    }

    /// Closes the descriptor (close(2)). Not repeated on `EINTR`: Linux has closed it anyway.
    public func close() throws(Errno) {
        if Glibc.close(rawValue) != 0 { throw Errno.current }
    }

    /// Runs `body`, then closes the descriptor, also when `body` throws.
    public func closeAfter<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        defer { try? close() }
        return try body()
    }
}
