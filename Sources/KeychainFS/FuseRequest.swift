import CFuse
import Glibc

/// One kernel request and its replies: the only place that calls `fuse_reply_*`.
struct FuseRequest: FileRequest, @unchecked Sendable {
    // Unchecked: a fuse_req_t, which libfuse lets any thread answer, once.
    let raw: fuse_req_t

    var caller: (uid: UInt32, gid: UInt32, pid: Int32) {
        let ctx = fuse_req_ctx(raw)!.pointee
        return (ctx.uid, ctx.gid, ctx.pid)
    }

    func error(_ errno: Int32) { fuse_reply_err(raw, errno) }
    func ok() { fuse_reply_err(raw, 0) }

    func entry(ino: UInt64, attr: stat, timeout: Double) {
        var e = Self.param(ino: ino, attr: attr, timeout: timeout)
        fuse_reply_entry(raw, &e)
    }

    func create(ino: UInt64, attr: stat, timeout: Double, opened: OpenInfo) {
        var e = Self.param(ino: ino, attr: attr, timeout: timeout)
        var fi = Self.fileInfo(opened)
        fuse_reply_create(raw, &e, &fi)
    }

    func attr(_ st: stat, timeout: Double) {
        var s = st
        fuse_reply_attr(raw, &s, timeout)
    }

    // libfuse copies the file info into the reply at once: a copy made here serves, also for
    // an open answered on another thread after the kernel's worker returned.
    func open(_ opened: OpenInfo) {
        var fi = Self.fileInfo(opened)
        fuse_reply_open(raw, &fi)
    }

    func buffer(_ bytes: UnsafeRawBufferPointer) {
        fuse_reply_buf(raw, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count)
    }

    func written(_ count: Int) { fuse_reply_write(raw, count) }

    func xattrSize(_ count: Int) { fuse_reply_xattr(raw, count) }

    func directory(offset: Int, size: Int, plus: Bool, entry: (Int) -> DirectoryEntry?, left: (Int, DirectoryEntry) -> Void) {
        var out = [UInt8](repeating: 0, count: size)
        var used = 0
        var index = offset
        while let e = entry(index) {
            var p = Self.param(ino: e.ino, attr: e.attr, timeout: e.timeout)
            let cName = e.name.map { CChar(bitPattern: $0) } + [0]
            let needed = out.withUnsafeMutableBufferPointer { buf in
                plus ? fuse_add_direntry_plus(raw, buf.baseAddress! + used, size - used, cName, &p, off_t(index + 1))
                     : fuse_add_direntry(raw, buf.baseAddress! + used, size - used, cName, &p.attr, off_t(index + 1))
            }
            if needed > size - used {
                left(index, e)
                break
            }
            used += needed
            index += 1
        }
        out.withUnsafeBytes { buffer(UnsafeRawBufferPointer(rebasing: $0[0..<used])) }
    }

    private static func param(ino: UInt64, attr: stat, timeout: Double) -> fuse_entry_param {
        var e = fuse_entry_param()
        e.ino = ino
        e.attr = attr
        e.attr_timeout = timeout
        e.entry_timeout = timeout
        return e
    }

    private static func fileInfo(_ opened: OpenInfo) -> fuse_file_info {
        var fi = fuse_file_info()
        fi.flags = opened.flags
        fi.fh = opened.handle
        fi.direct_io = opened.directIO ? 1 : 0
        fi.keep_cache = opened.keepCache ? 1 : 0
        fi.noflush = opened.noFlush ? 1 : 0
        return fi
    }
}
