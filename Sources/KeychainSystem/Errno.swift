import Glibc

/// An error number of the C library: a type rather than a bare `Int32`, named as the kernel
/// names it, printed with the C library's own message.
public struct Errno: Error, Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno`; read it right after the call that failed.
    public static var current: Errno { Errno(rawValue: errno) }

    /// The errno an error carries: itself when it is one (as thrown through a closure that
    /// loses the error's type), else `EIO`.
    public init(_ error: any Error) { self = error as? Errno ?? .ioError }

    /// The C library's sentence for it ("No space left on device", `strerror`).
    public var description: String { String(cString: strerror(rawValue)) }

    /// Lets `catch Errno.noSuchFile` match an error thrown as `any Error`.
    public static func ~= (pattern: Errno, error: any Error) -> Bool { (error as? Errno) == pattern }

    public static let interrupted = Errno(rawValue: EINTR)
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    public static let noSuchFile = Errno(rawValue: ENOENT)
    public static let permissionDenied = Errno(rawValue: EACCES)
    public static let notPermitted = Errno(rawValue: EPERM)
    public static let fileExists = Errno(rawValue: EEXIST)
    public static let invalidArgument = Errno(rawValue: EINVAL)
    public static let noSpace = Errno(rawValue: ENOSPC)
    public static let diskQuotaExceeded = Errno(rawValue: EDQUOT)
    public static let noMemory = Errno(rawValue: ENOMEM)
    public static let readOnlyFileSystem = Errno(rawValue: EROFS)
    public static let ioError = Errno(rawValue: EIO)
    public static let connectionAborted = Errno(rawValue: ECONNABORTED)
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    public static let notConnected = Errno(rawValue: ENOTCONN)
    public static let addressInUse = Errno(rawValue: EADDRINUSE)
    public static let brokenPipe = Errno(rawValue: EPIPE)
    public static let badDescriptor = Errno(rawValue: EBADF)
    public static let notSocket = Errno(rawValue: ENOTSOCK)
    public static let nameTooLong = Errno(rawValue: ENAMETOOLONG)
    public static let notDirectory = Errno(rawValue: ENOTDIR)
    public static let isDirectory = Errno(rawValue: EISDIR)
    public static let tooManySymbolicLinks = Errno(rawValue: ELOOP)
    public static let noChild = Errno(rawValue: ECHILD)
    public static let protocolNotAvailable = Errno(rawValue: ENOPROTOOPT)
    public static let tooManyOpenFiles = Errno(rawValue: EMFILE)
    public static let tooManyOpenFilesInSystem = Errno(rawValue: ENFILE)
    public static let noBufferSpace = Errno(rawValue: ENOBUFS)
}
