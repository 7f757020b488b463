import Glibc
import KeychainClient
import KeychainCore
import KeychainFS
import KeychainProtocol

/// `mount` and `unmount`: the vault's daemon serves the mount.
enum MountVerbs {
    static let all: [Verb] = [mount, unmount]

    static let mount = Verb(
        name: "mount", usage: "[-o OPTIONS] [--groups A[,B]] [--map-owner UID:GID] [--mode MODE] MOUNTPOINT [VAULT]",
        summary: "Mount the vault: each generic password becomes /<service>/<account>.",
        valued: ["-o", "--groups", "--map-owner", "--mode"],
        details: """
        Options (comma-separated): allow_other (other users may enter; file modes still apply),
        ro (every change fails with EROFS), kernel_cache (let the kernel cache secrets; off by
        default, so reads bypass the page cache). The daemon serves the mount and is started if
        needed; the command returns once the mount is live. Needs root or the daemon's user.
        The mount.fuse3 form `keychainfs VAULT MOUNTPOINT -o OPTIONS` works too (for /etc/fstab).
        A view for a container: --groups shows only those access groups and --map-owner makes
        every file and directory owned by UID:GID (options groups=A:B, map_uid=, map_gid=);
        that uid may then read what the view shows; --mode 0400 sets the permission bits every
        file shows (option mode=), for readers that refuse group bits (libpq's passfile). All
        views share the daemon: one unlock, one lock. A mount whose daemon died is replaced; a
        mounted directory exits 45 ("already mounted"), a missing one 2 ("no such directory").
        """
    ) { ctx in
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
    static func mountVault(_ vault: String, at point: String, options: String) throws -> Int32 {
        let parsed = try checkOptions(options)
        var st = stat()
        if stat(point, &st) != 0 {
            guard errno == ENOTCONN || errno == ECONNABORTED else {
                throw UsageError(errno == ENOENT ? "\(point): no such directory" : "\(point): \(String(cString: strerror(errno)))")
            }
        } else if st.st_mode & S_IFMT != S_IFDIR {
            throw UsageError("\(point) is not a directory")
        }
        if FuseMount.isMounted(point) {
            guard FuseMount.isDead(point) else { throw StateError.alreadyMounted(point) }
            guard FuseMount.unmount(point, lazy: true) else { throw StateError.cannotUnmount(point, errno) }
        }
        let client = try DaemonClient.connect(vaultPath: vault, startWith: [selfExecutable(), "daemon", vault])
        let uid = Paths.vaultOwner(vault)
        let device = try FuseMount.mount(at: point, allowOther: parsed.allowOther, readOnly: parsed.readOnly,
                                         owner: (uid, getpwuid(uid)?.pointee.pw_gid ?? 0))
        defer { close(device) }
        do {
            try client.send(Request(.mount, options: ["mountpoint": .string(point), "options": .string(options)]), passing: device)
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

    static let unmount = Verb(
        name: "unmount", usage: "MOUNTPOINT [VAULT]",
        summary: "Unmount a keychainfs mount (also when its daemon is gone)."
    ) { ctx in
        guard (1...2).contains(ctx.args.positionals.count) else { throw UsageError("unmount needs a MOUNTPOINT") }
        let point = Paths.canonical(ctx.args.positionals[0])
        let vault = ctx.args.positionals.count == 2 ? Paths.canonical(ctx.args.positionals[1]) : Paths.canonical(Paths.defaultVault())
        // The daemon ends its session; the mount itself lives in this namespace: unmount here.
        var known = false
        if let client = try? DaemonClient.connect(vaultPath: vault) {
            do {
                try client.send(Request(.unmount, options: ["mountpoint": .string(point)]))
                known = true
            } catch KeychainStatus.itemNotFound {
                // Not this daemon's mount (or its daemon is gone): the kernel's alone.
            }
        }
        guard known || FuseMount.isMounted(point) else {
            Terminal.writeString(2, "keychainfs: \(point) is not mounted\n")
            return KeychainStatus.itemNotFound.exitCode
        }
        guard FuseMount.unmount(point, lazy: FuseMount.isDead(point)) else {
            Terminal.writeString(2, "keychainfs: cannot unmount \(point): \(String(cString: strerror(errno)))\n")
            return KeychainStatus.io.exitCode
        }
        return 0
    }
}

/// A mount's state that refuses the request, named; exits with the status a script knows.
struct StateError: Error {
    let message: String
    let status: KeychainStatus

    static func alreadyMounted(_ point: String) -> StateError {
        StateError(message: "\(point) is already mounted", status: .duplicateItem)
    }

    static func cannotUnmount(_ point: String, _ code: Int32) -> StateError {
        StateError(message: "cannot unmount the dead mount at \(point): \(String(cString: strerror(code)))", status: .io)
    }
}
