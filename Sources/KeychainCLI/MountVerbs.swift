import Glibc
import KeychainClient
import KeychainCore
import KeychainFS
import KeychainProtocol

/// `mount` and `unmount`: the vault's daemon serves the mount.
enum MountVerbs {
    static let all: [Verb] = [mount, unmount]

    static let mount = Verb(
        name: "mount", usage: "[-o OPTIONS] [--groups A[,B]] [--map-owner UID:GID] MOUNTPOINT [VAULT]",
        summary: "Mount the vault: each generic password becomes /<service>/<account>.",
        valued: ["-o", "--groups", "--map-owner"],
        details: """
        Options (comma-separated): allow_other (other users may enter; file modes still apply),
        ro (every change fails with EROFS), kernel_cache (let the kernel cache secrets; off by
        default, so reads bypass the page cache). The daemon serves the mount and is started if
        needed; the command returns once the mount is live. Needs root or the daemon's user.
        The mount.fuse3 form `keychainfs VAULT MOUNTPOINT -o OPTIONS` works too (for /etc/fstab).
        A view for a container: --groups shows only those access groups and --map-owner makes
        every file and directory owned by UID:GID (options groups=A:B, map_uid=, map_gid=);
        that uid may then read what the view shows. All views share the daemon: one unlock,
        one lock.
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
        return try mountVault(vault, at: point, options: options.joined(separator: ","))
    }

    static func mountVault(_ vault: String, at point: String, options: String) throws -> Int32 {
        try checkOptions(options)
        var st = stat()
        guard stat(point, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { throw UsageError("\(point) is not a directory") }
        let client = try DaemonClient.connect(vaultPath: vault, startWith: [selfExecutable(), "daemon", vault])
        try client.send(Request(.mount, options: ["mountpoint": .string(point), "options": .string(options)]))
        return 0
    }

    /// Parses `-o` with the parser the mount itself uses, so a bad option is a usage error that
    /// names it before the daemon is asked (or started).
    static func checkOptions(_ list: String) throws {
        do {
            _ = try MountOptions(parsing: list)
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
        if let client = try? DaemonClient.connect(vaultPath: vault) {
            do {
                try client.send(Request(.unmount, options: ["mountpoint": .string(point)]))
                return 0
            } catch KeychainStatus.itemNotFound {
                // Not this daemon's mount: fall through to the kernel.
            }
        }
        guard umount2(point, 0) == 0 || umount2(point, Int32(MNT_DETACH)) == 0 else {
            Terminal.writeString(2, "keychainfs: cannot unmount \(point): \(String(cString: strerror(errno)))\n")
            return KeychainStatus.io.exitCode
        }
        return 0
    }
}
