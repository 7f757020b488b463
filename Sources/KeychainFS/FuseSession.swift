import CFuse
import CProcess
import Glibc
import KeychainCore
import KeychainSystem

/// Mounting, the kernel operation table and the request loop: the C side of the mount.
/// Each callback finds its `MountServer` through the session's user data and hands over.
extension MountServer {
    static func server(_ req: fuse_req_t?) -> MountServer {
        Unmanaged<MountServer>.fromOpaque(fuse_req_userdata(req)!).takeUnretainedValue()
    }

    static func bytes(_ name: UnsafePointer<CChar>?) -> [UInt8] {
        guard let name else { return [] }
        return Array(UnsafeRawBufferPointer(start: name, count: strlen(name)))
    }

    static func operations() -> fuse_lowlevel_ops {
        var ops = fuse_lowlevel_ops()
        // O_TRUNC comes to `open` as a flag (the write starts empty in its buffer), instead of
        // a SETATTR size=0 before the open that would empty the stored secret at once.
        ops.`init` = { _, conn in
            guard let conn else { return }
            let atomicTruncate = UInt32(FUSE_CAP_ATOMIC_O_TRUNC)
            if conn.pointee.capable & atomicTruncate != 0 { conn.pointee.want |= atomicTruncate }
        }
        ops.lookup = { req, parent, name in MountServer.server(req).lookup(FuseRequest(raw: req!), parent: parent, name: MountServer.bytes(name)) }
        ops.forget = { req, ino, n in MountServer.server(req).forget(ino, n); fuse_reply_none(req) }
        // The kernel batches the FORGETs of many dropped names (a lock frees thousands): one
        // request and one pass over the table under one lock, instead of libfuse making a
        // request per name for `forget`.
        ops.forget_multi = { req, count, forgets in
            MountServer.server(req).inodes.forget(UnsafeBufferPointer(start: forgets, count: count))
            fuse_reply_none(req)
        }
        ops.getattr = { req, ino, _ in MountServer.server(req).getattr(FuseRequest(raw: req!), ino: ino) }
        ops.setattr = { req, ino, attr, toSet, fi in
            MountServer.server(req).setattr(FuseRequest(raw: req!), ino: ino, attr: attr!.pointee, toSet: toSet, handle: fi?.pointee.fh)
        }
        ops.opendir = { req, ino, fi in MountServer.server(req).opendir(FuseRequest(raw: req!), ino: ino, opened: OpenInfo(flags: fi!.pointee.flags)) }
        ops.readdir = { req, _, size, off, fi in MountServer.server(req).readdir(FuseRequest(raw: req!), size: size, offset: Int(off), handle: fi!.pointee.fh) }
        ops.readdirplus = { req, _, size, off, fi in
            MountServer.server(req).readdir(FuseRequest(raw: req!), size: size, offset: Int(off), handle: fi!.pointee.fh, plus: true)
        }
        ops.releasedir = { req, _, fi in MountServer.server(req).releasedir(FuseRequest(raw: req!), handle: fi!.pointee.fh) }
        ops.mkdir = { req, parent, name, _ in MountServer.server(req).mkdir(FuseRequest(raw: req!), parent: parent, name: MountServer.bytes(name)) }
        ops.rmdir = { req, parent, name in MountServer.server(req).rmdir(FuseRequest(raw: req!), parent: parent, name: MountServer.bytes(name)) }
        ops.unlink = { req, parent, name in MountServer.server(req).unlink(FuseRequest(raw: req!), parent: parent, name: MountServer.bytes(name)) }
        ops.rename = { req, parent, name, newParent, newName, flags in
            MountServer.server(req).rename(FuseRequest(raw: req!), parent: parent, name: MountServer.bytes(name), newParent: newParent,
                               newName: MountServer.bytes(newName), flags: flags)
        }
        ops.open = { req, ino, fi in MountServer.server(req).open(FuseRequest(raw: req!), ino: ino, opened: OpenInfo(flags: fi!.pointee.flags)) }
        ops.create = { req, parent, name, _, fi in
            MountServer.server(req).create(FuseRequest(raw: req!), parent: parent, name: MountServer.bytes(name), opened: OpenInfo(flags: fi!.pointee.flags))
        }
        ops.read = { req, _, size, off, fi in MountServer.server(req).read(FuseRequest(raw: req!), size: size, offset: Int(off), handle: fi!.pointee.fh) }
        ops.write = { req, _, buf, size, off, fi in
            MountServer.server(req).write(FuseRequest(raw: req!), data: UnsafeRawBufferPointer(start: buf, count: size), offset: Int(off), handle: fi!.pointee.fh)
        }
        ops.flush = { req, _, fi in MountServer.server(req).flush(FuseRequest(raw: req!), handle: fi!.pointee.fh) }
        ops.release = { req, _, fi in MountServer.server(req).release(FuseRequest(raw: req!), handle: fi!.pointee.fh) }
        ops.fsync = { req, _, _, fi in MountServer.server(req).flush(FuseRequest(raw: req!), handle: fi!.pointee.fh) }
        ops.getxattr = { req, ino, name, size in
            MountServer.server(req).getxattr(FuseRequest(raw: req!), ino: ino, name: String(cString: name!), size: size)
        }
        ops.listxattr = { req, ino, size in MountServer.server(req).listxattr(FuseRequest(raw: req!), ino: ino, size: size) }
        ops.setxattr = { req, ino, name, value, size, _ in
            let v = size > 0 ? Array(UnsafeRawBufferPointer(start: value, count: size)) : []
            MountServer.server(req).setxattr(FuseRequest(raw: req!), ino: ino, name: String(cString: name!), value: v)
        }
        ops.removexattr = { req, _, name in MountServer.server(req).removexattr(FuseRequest(raw: req!), name: String(cString: name!)) }
        ops.statfs = { req, _ in
            var st = statvfs()
            st.f_bsize = 4096
            st.f_frsize = 4096
            st.f_namemax = 255
            fuse_reply_statfs(req, &st)
        }
        return ops
    }

    /// Serves requests on a thread of its own until `unmount`: on `device`, a /dev/fuse
    /// descriptor whose mount the asker made in its own namespace (libfuse's `/dev/fd/N`
    /// mountpoint form; the session owns and closes it, also when this throws), or, without
    /// one, on a mount this process makes at `mountpoint` (mount(2) as root, fusermount3 otherwise).
    /// - Throws: `KeychainStatus.io` when the session cannot be made or mounted.
    public func start(device: Int32? = nil) throws {
        var options = "default_permissions,fsname=keychainfs,subtype=keychainfs"
        if self.options.allowOther { options += ",allow_other" }
        if self.options.readOnly { options += ",ro" }
        var argv: [UnsafeMutablePointer<CChar>?] = [strdup("keychainfs"), strdup("-o"), strdup(options), nil]
        defer { for p in argv { free(p) } }
        var ops = MountServer.operations()
        let me = Unmanaged.passRetained(self).toOpaque()
        let made = argv.withUnsafeMutableBufferPointer { list -> OpaquePointer? in
            var args = fuse_args(argc: 3, argv: list.baseAddress, allocated: 0)
            // fuse_session_new rewrites the arguments into a list of its own: free that one.
            defer { fuse_opt_free_args(&args) }
            return fuse_session_new(&args, &ops, MemoryLayout<fuse_lowlevel_ops>.size, me)
        }
        guard let se = made else {
            if let device { close(device) }
            Unmanaged<MountServer>.fromOpaque(me).release()
            throw KeychainStatus.io
        }
        guard fuse_session_mount(se, device.map { "/dev/fd/\($0)" } ?? mountpoint) == 0 else {
            if let device { close(device) }
            fuse_session_destroy(se)
            Unmanaged<MountServer>.fromOpaque(me).release()
            throw KeychainStatus.io
        }
        began(se)
        startIdleSweeps()
        startThread { [self] in
            let config = fuse_loop_cfg_create()
            fuse_loop_cfg_set_max_threads(config, 16)
            _ = fuse_session_loop_mt(se, config)
            fuse_loop_cfg_destroy(config)
            ended { se in
                fuse_session_unmount(se)
                fuse_session_destroy(se)
                Unmanaged<MountServer>.fromOpaque(me).release()
            }
        }
    }

    /// Ends the request loop and unmounts. Safe to call more than once.
    public func unmount() {
        withSession { se in fuse_session_exit(se) }
        // The loop thread is blocked reading /dev/fuse; unmounting wakes it with ENODEV. A mount
        // in another namespace is not found here: its asker unmounts it (`keychainfs unmount`).
        if geteuid() == 0 || !MountServer.fusermountUnmount(mountpoint) {
            umount2(mountpoint, Int32(MNT_DETACH))
        }
    }

    /// `fusermount3 -u -z -q MOUNTPOINT`, how a user who is not root unmounts; true when it ran
    /// and succeeded.
    public static func fusermountUnmount(_ point: String) -> Bool {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        kcfs_spawn_actions_closefrom(&actions, 3)  // a setuid program gets none of the daemon's descriptors
        let argv: [String] = ["/usr/bin/fusermount3", "-u", "-z", "-q", "--", point]
        var args: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var env: [UnsafeMutablePointer<CChar>?] = [strdup("PATH=/usr/sbin:/usr/bin:/sbin:/bin"), nil]
        defer { for p in args + env { free(p) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, argv[0], &actions, nil, &args, &env) == 0 else { return false }
        return ChildProcess.waitForExit(pid) == 0
    }
}

/// Runs `body` on a new detached thread.
func startThread(_ body: @escaping () -> Void) {
    final class Box { let body: () -> Void; init(_ b: @escaping () -> Void) { body = b } }
    let context = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    pthread_create(&thread, nil, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        box.body()
        return nil
    }, context)
    pthread_detach(thread)
}
