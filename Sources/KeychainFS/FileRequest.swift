import Glibc

/// One kernel request as the mount's nodes see it: who asks, and the replies it may take (one
/// of them, once). `FuseRequest` answers the kernel; tests answer into a record instead, so every
/// node kind can be tried without root or /dev/fuse.
protocol FileRequest: Sendable {
    /// The calling process as the kernel reports it.
    var caller: (uid: UInt32, gid: UInt32, pid: Int32) { get }
    func error(_ errno: Int32)
    func ok()
    func entry(ino: UInt64, attr: stat, timeout: Double)
    func create(ino: UInt64, attr: stat, timeout: Double, opened: OpenInfo)
    func attr(_ st: stat, timeout: Double)
    func open(_ opened: OpenInfo)
    func buffer(_ bytes: UnsafeRawBufferPointer)
    func written(_ count: Int)
    func xattrSize(_ count: Int)
    /// Directory entries from `offset`, packed until `size` bytes; each entry's offset is its
    /// index + 1. `entry` gives the entry at an index (nil past the end); the first one that does
    /// not fit is handed to `left` and ends the reply. With `plus`, a READDIRPLUS reply.
    func directory(offset: Int, size: Int, plus: Bool, entry: (Int) -> DirectoryEntry?, left: (Int, DirectoryEntry) -> Void)
}

extension FileRequest {
    func buffer(_ bytes: [UInt8]) { bytes.withUnsafeBytes { buffer($0) } }
}

/// One name of a directory reply, with what READDIRPLUS tells the kernel about it.
struct DirectoryEntry {
    let name: [UInt8]
    var ino: UInt64
    var attr: stat
    var timeout: Double = 0
}

/// What the kernel's file info says of an open, and what the reply tells it back: the handle
/// later requests name, and how the kernel may cache and flush the file.
struct OpenInfo: Sendable {
    let flags: Int32
    var handle: UInt64 = 0
    var directIO = false
    var keepCache = false
    var noFlush = false

    init(flags: Int32) { self.flags = flags }

    /// The access mode bits of `flags` (O_RDONLY, O_WRONLY, O_RDWR).
    var accessMode: Int32 { flags & O_ACCMODE }
}
