import CFuse
import Glibc
import KeychainCrypto

/// One kernel request and its replies: the only place that calls `fuse_reply_*`.
struct FuseRequest: @unchecked Sendable {
    // Unchecked: a fuse_req_t, which libfuse lets any thread answer, once.
    let raw: fuse_req_t

    /// The calling process as the kernel reports it (`fuse_req_ctx`).
    var caller: (uid: UInt32, gid: UInt32, pid: Int32) {
        let ctx = fuse_req_ctx(raw)!.pointee
        return (ctx.uid, ctx.gid, ctx.pid)
    }

    func error(_ errno: Int32) { fuse_reply_err(raw, errno) }
    func ok() { fuse_reply_err(raw, 0) }

    func entry(ino: UInt64, attr: stat, timeout: Double) {
        var e = fuse_entry_param()
        e.ino = ino
        e.attr = attr
        e.attr_timeout = timeout
        e.entry_timeout = timeout
        fuse_reply_entry(raw, &e)
    }

    func create(ino: UInt64, attr: stat, timeout: Double, fi: UnsafePointer<fuse_file_info>) {
        var e = fuse_entry_param()
        e.ino = ino
        e.attr = attr
        e.attr_timeout = timeout
        e.entry_timeout = timeout
        fuse_reply_create(raw, &e, fi)
    }

    func attr(_ st: stat, timeout: Double) {
        var s = st
        fuse_reply_attr(raw, &s, timeout)
    }

    func open(_ fi: UnsafePointer<fuse_file_info>) { fuse_reply_open(raw, fi) }

    func buffer(_ bytes: UnsafeRawBufferPointer) {
        fuse_reply_buf(raw, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count)
    }

    func buffer(_ bytes: [UInt8]) { bytes.withUnsafeBytes { buffer($0) } }

    func written(_ count: Int) { fuse_reply_write(raw, count) }

    func xattrSize(_ count: Int) { fuse_reply_xattr(raw, count) }

    /// Directory entries from `offset`, packed until `size` bytes; each entry's offset is its
    /// index + 1. `entry` gives the entry at an index (nil past the end); the first one that does
    /// not fit is handed to `left` and ends the reply. With `plus`, a READDIRPLUS reply.
    func directory(offset: Int, size: Int, plus: Bool, entry: (Int) -> (name: [UInt8], param: fuse_entry_param)?,
                   left: (Int, fuse_entry_param) -> Void) {
        var out = [UInt8](repeating: 0, count: size)
        var used = 0
        var index = offset
        while let (name, param) = entry(index) {
            var p = param
            let cName = name.map { CChar(bitPattern: $0) } + [0]
            let needed = out.withUnsafeMutableBufferPointer { buf in
                plus ? fuse_add_direntry_plus(raw, buf.baseAddress! + used, size - used, cName, &p, off_t(index + 1))
                     : fuse_add_direntry(raw, buf.baseAddress! + used, size - used, cName, &p.attr, off_t(index + 1))
            }
            if needed > size - used {
                left(index, p)
                break
            }
            used += needed
            index += 1
        }
        out.withUnsafeBytes { buffer(UnsafeRawBufferPointer(rebasing: $0[0..<used])) }
    }
}

extension fuse_file_info {
    /// The access mode bits of `flags` (O_RDONLY, O_WRONLY, O_RDWR).
    var accessMode: Int32 { flags & O_ACCMODE }
}
