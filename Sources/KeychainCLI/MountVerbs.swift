import KeychainClient
import KeychainModel
import KeychainProtocol
import KeychainSystem

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
        `keychainfs stop` takes the mounts down and the vault's next daemon mounts them again
        (`status` lists them meanwhile); `unmount` one to keep it down. Mounting such a directory
        again while no daemon runs replaces its record with this command's options.
        """
    )  // body: keychainfs-daemon (options are checked by the mount's own parser)

    static let unmount = Verb(
        name: "unmount", usage: "MOUNTPOINT [VAULT]",
        summary: "Unmount a keychainfs mount (also when its daemon is gone).",
        details: """
        A mount that `keychainfs stop` took down comes back with the vault's next daemon; unmount
        it while no daemon runs and it does not.
        """
    ) { ctx in
        guard (1...2).contains(ctx.args.positionals.count) else { throw UsageError("unmount needs a MOUNTPOINT") }
        let point = Paths.canonical(ctx.args.positionals[0])
        let vault = ctx.args.positionals.count == 2 ? Paths.canonical(ctx.args.positionals[1]) : Paths.canonical(Paths.defaultVault())
        // The daemon ends its session; the mount itself lives in this namespace: unmount here.
        var known = false
        if let client = try? DaemonClient.connect(vaultPath: vault) {
            do {
                try client.send(MountRequest.unmount(point: point).request)
                known = true
            } catch KeychainStatus.itemNotFound {
                // Not this daemon's mount (or its daemon is gone): the kernel's alone.
            }
        } else {
            // No daemon: a mount that a stop took down is forgotten, so the next daemon does
            // not mount it again.
            let records = Paths.mountRecords(forVault: vault)
            do {
                known = try MountRecord.forgetStopped(point, in: records)
            } catch {
                throw StateError(message: "cannot forget the stopped mount \(point) in \(records): \(error)", status: .io)
            }
            if known && !FuseMount.isMounted(point) { return 0 }
        }
        guard known || FuseMount.isMounted(point) else {
            throw StateError(message: "\(point) is not mounted", status: .itemNotFound)
        }
        guard FuseMount.unmount(point, lazy: FuseMount.isDead(point)) else {
            throw StateError(message: "cannot unmount \(point): \(Errno.current)", status: .io)
        }
        return 0
    }
}

/// A mount's state that refuses the request, named; exits with the status a script knows.
package struct StateError: Error {
    let message: String
    let status: KeychainStatus

    package init(message: String, status: KeychainStatus) {
        self.message = message
        self.status = status
    }

    /// Apple's sentence for `status`, then what it means here.
    package static func explained(_ status: KeychainStatus, _ meaning: String) -> StateError {
        StateError(message: status.message + "\nkeychainfs: " + meaning, status: status)
    }

    package static func alreadyMounted(_ point: String) -> StateError {
        StateError(message: "\(point) is already mounted", status: .duplicateItem)
    }

    package static func cannotUnmount(_ point: String, _ code: Int32) -> StateError {
        StateError(message: "cannot unmount the dead mount at \(point): \(Errno(rawValue: code))", status: .io)
    }
}
