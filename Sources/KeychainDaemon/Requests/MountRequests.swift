import CProcess
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainFS
import KeychainProtocol

/// mount and unmount: FUSE mounts the daemon serves.
struct MountRequests: RequestFamily {
    let daemon: Daemon

    /// `descriptor`: the /dev/fuse of a mount the caller made, passed with the request.
    func respond(_ request: MountRequest, descriptor: PassedDescriptor?, caller: CallerIdentity) throws -> Response {
        let point: String, raw: String
        switch request {
        case .unmount(let p): return try unmount(p, caller: caller)
        case .mount(let p, let options): (point, raw) = (p, options)
        }
        let options = try MountOptions(parsing: raw)
        guard point.hasPrefix("/") else { throw KeychainStatus.param }
        if let device = descriptor {
            // The asker mounted it in its namespace already; stat here would wait for this very
            // daemon to answer the kernel's INIT. The descriptor must be the FUSE device itself.
            guard kcfs_is_fuse_device(device.value) == 1 else { throw KeychainStatus.param }
        } else {
            var st = stat()
            guard stat(point, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { throw KeychainStatus.param }
        }
        // Mounts that umount(8) ended are forgotten first.
        let taken = daemon.state.withLock { s in
            s.mounts.removeAll { $0.hasEnded }
            return s.mounts.contains { $0.mountpoint == point }
        }
        guard !taken else { throw KeychainStatus.duplicateItem }
        let server = MountServer(mountpoint: point, options: options, vault: vault, policy: daemon)
        try server.start(device: descriptor?.take())
        daemon.state.withLock { $0.mounts.append(server) }
        daemon.recordMount(MountRecord(mountpoint: point, options: raw, uid: caller.uid))
        try? audit(.mount, caller, options.description)  // every open through it is logged or refused
        log("mounted at \(point) (\(options.description)) by \(who(caller))")
        return Response()
    }

    private func unmount(_ point: String, caller: CallerIdentity) throws -> Response {
        guard let server = daemon.state.withLock({ s -> MountServer? in
            guard let i = s.mounts.firstIndex(where: { $0.mountpoint == point }) else { return nil }
            return s.mounts.remove(at: i)
        }) else { throw KeychainStatus.itemNotFound }
        server.unmount()
        daemon.forgetMount(point)
        try? audit(.unmount, caller)  // an unmount ends reads, whether or not its line can be written
        log("unmounted \(point) by \(who(caller))")
        return Response()
    }
}
