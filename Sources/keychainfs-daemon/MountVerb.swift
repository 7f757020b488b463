import KeychainCLI
import KeychainClient
import KeychainCore
import KeychainFS
import KeychainProtocol
import KeychainSystem

/// The body of `mount` (declared, with its help, in KeychainCLI) and the mount.fuse3 form.
enum MountVerb {
    static let mount: VerbBody = { ctx in
        guard (1...2).contains(ctx.args.positionals.count) else { throw UsageError("mount needs a MOUNTPOINT") }
        let point = Paths.canonical(ctx.args.positionals[0])
        let vault = ctx.args.positionals.count == 2 ? Paths.canonical(ctx.args.positionals[1]) : Paths.canonical(Paths.defaultVault())
        var options = ctx.args.all("-o")
        if let g = ctx.args.value("--groups") {
            let names = g.split(separator: ",", omittingEmptySubsequences: false)
            guard !names.contains(where: \.isEmpty) else { throw UsageError("--groups takes group names separated by commas, such as team,ci") }
            options.append("groups=" + names.joined(separator: ":"))
        }
        if let m = ctx.args.value("--map-owner") {
            let parts = m.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2 else { throw UsageError("--map-owner takes UID:GID, such as 1000:1000") }
            let uid = try Arguments.number(parts[0], flag: "--map-owner", in: SettingLimits.id, unit: "a UID:GID with each")
            let gid = try Arguments.number(parts[1], flag: "--map-owner", in: SettingLimits.id, unit: "a UID:GID with each")
            options += ["map_uid=\(uid)", "map_gid=\(gid)"]
        }
        if let m = ctx.args.value("--mode") {
            guard let n = UInt16(m, radix: 8), n <= 0o777 else { throw UsageError("--mode takes octal permission bits, such as 0400") }
            options.append("mode=0" + String(n, radix: 8))
        }
        return try mountVault(vault, at: point, options: options.joined(separator: ","))
    }

    /// Mounts here, in the caller's mount namespace, and hands the FUSE descriptor to the
    /// daemon, which serves it. A mount whose daemon died is replaced.
    @Sendable static func mountVault(_ vault: String, at point: String, options: String) throws -> Int32 {
        let parsed = try checkOptions(options)
        // A mount whose server died answers ENOTCONN (ECONNABORTED once aborted): replaced below.
        let pointStatus: FileStatus?
        do { pointStatus = try FileSystem.status(of: point) } catch {
            let reason = Errno(error)
            guard reason == .notConnected || reason == .connectionAborted else {
                throw UsageError(reason == .noSuchFile ? "\(point): no such directory" : "\(point): \(reason)")
            }
            pointStatus = nil
        }
        if let pointStatus, pointStatus.kind != .directory { throw UsageError("\(point) is not a directory") }
        if FuseMount.isMounted(point) {
            guard FuseMount.isDead(point) else { throw StateError.alreadyMounted(point) }
            guard FuseMount.unmount(point, lazy: true) else { throw StateError.cannotUnmount(point, Errno.current.rawValue) }
        }
        // A mount a stop took down here would come back with the daemon this starts: this
        // command's options replace it.
        if (try? DaemonClient.connect(vaultPath: vault)) == nil {
            _ = try? MountRecord.forgetStopped(point, in: Paths.mountRecords(forVault: vault))
        }
        let client = try Engine.connect(vault)
        let uid = Paths.vaultOwner(vault)
        let device = try FuseMount.mount(at: point, allowOther: parsed.allowOther, readOnly: parsed.readOnly,
                                         owner: (uid, UserDatabase.primaryGroup(of: uid) ?? 0))
        defer { try? FileDescriptor(rawValue: device).close() }
        do {
            try client.send(MountRequest.mount(point: point, options: options).request, passing: device)
        } catch {
            FuseMount.unmount(point, lazy: true)
            if case KeychainStatus.duplicateItem = error { throw StateError.alreadyMounted(point) }
            throw error
        }
        return 0
    }

    /// Parses `-o` with the parser the mount itself uses, so a bad option is a usage error that
    /// names it before the daemon is asked (or started).
    @discardableResult
    static func checkOptions(_ list: String) throws -> MountOptions {
        do {
            return try MountOptions(parsing: list)
        } catch let e as MountOptionError {
            throw UsageError("unknown or malformed mount option \(Output.jsonString(e.option)); see keychainfs help mount")
        }
    }
}
