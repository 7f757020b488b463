import CProcess
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainFS
import KeychainProtocol

/// mount and unmount: FUSE mounts the daemon serves.
struct MountRequests: RequestFamily {
    let context: RequestContext

    /// The mount's /dev/fuse, when the caller made the mount itself, travels beside the request.
    func mount(_ call: MountCall) throws -> Outcome {
        guard case .mount(let point, let raw) = call.mount else { throw KeychainStatus.param }
        let descriptor = call.descriptor
        let control = context.control
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
        try control.serve(point: point, options: options, raw: raw, device: descriptor?.take(), for: caller)
        try? audit(.mount, caller, options.description)  // every open through it is logged or refused
        log("mounted at \(point) (\(options.description)) by \(who(caller))")
        return .reply(StatusReply())
    }

    func unmount(_ request: MountRequest) throws -> Outcome {
        guard case .unmount(let point) = request else { throw KeychainStatus.param }
        try context.control.endMount(point)
        try? audit(.unmount, caller)  // an unmount ends reads, whether or not its line can be written
        log("unmounted \(point) by \(who(caller))")
        return .reply(StatusReply())
    }
}

/// A mount request and the /dev/fuse descriptor passed beside it, if any.
struct MountCall: TypedRequest {
    let mount: MountRequest
    let descriptor: PassedDescriptor?

    init(decoding request: Request) throws {
        mount = try MountRequest(decoding: request)
        descriptor = request.descriptor
    }

    var request: Request {
        var r = mount.request
        r.descriptor = descriptor
        return r
    }
}
