import KeychainSystem

/// Where a vault's daemon socket, lock, log and back-off file live, and why a directory there
/// cannot be trusted.
///
/// The rendezvous is a directory every user can compute from the vault path alone (PRODUCT 7):
/// `/run/keychainfs` for root's vaults, `/tmp/keychainfs-UID` for UID's. In /tmp any user can
/// create that name first. When they have, the vault's owner (and root) fall back to the
/// owner's login runtime directory, `/run/user/UID/keychainfs` (what `$XDG_RUNTIME_DIR` names
/// in a login session, taken from the uid, not the environment, so cron jobs and services
/// agree with login shells). Other users cannot enter `/run/user/UID` (mode 0700), so they get
/// an error that names the squatted directory instead.
public enum RuntimeDirectory {
    /// The directory for a vault owned by `owner`, as seen by the calling user.
    /// - Parameter name: the vault's file stem in the directory (`<hash>`), to find a daemon
    ///   already serving from the fallback.
    static func forVault(owner: UInt32, name: String) -> String {
        if owner == 0 { return "/run/keychainfs" }
        let shared = "/tmp/keychainfs-\(owner)"
        guard CurrentProcess.effectiveUserID == owner || CurrentProcess.effectiveUserID == 0, let own = ownerDirectory(owner) else { return shared }
        // A daemon that fell back stays there until it stops, even once the squat is removed,
        // so the vault never has two.
        if problem(with: shared, owner: owner) != nil || isSocket(own + "/" + name + ".sock") { return own }
        return shared
    }

    /// Why `dir` cannot hold the daemon socket of a vault owned by `owner`, or nil when it can
    /// (also when it does not exist yet). Only root or the owner may own it, it must be a real
    /// directory, and nobody else may write to it, or another user could stand in for the daemon.
    public static func problem(with dir: String, owner: UInt32) -> String? {
        guard let st = try? FileSystem.status(of: dir, followingLinks: false) else { return nil }
        if st.kind == .symbolicLink { return "it is a symbolic link" }
        if st.kind != .directory { return "it is not a directory" }
        if st.owner != 0 && st.owner != owner {
            return "it belongs to uid \(st.owner), not to the vault's owner (uid \(owner))"
        }
        if !st.permissions.isDisjoint(with: .groupOrOtherWrite) {
            return "other users may write to it (mode \(st.permissions))"
        }
        return nil
    }

    /// `/run/user/UID/keychainfs` when `/run/user/UID` is the owner's private directory.
    static func ownerDirectory(_ owner: UInt32) -> String? {
        let base = "/run/user/\(owner)"
        guard let st = try? FileSystem.status(of: base, followingLinks: false), st.kind == .directory, st.owner == owner,
              st.permissions.isDisjoint(with: .groupOrOtherWrite) else {
            return nil
        }
        return base + "/keychainfs"
    }

    static func isSocket(_ path: String) -> Bool {
        (try? FileSystem.status(of: path, followingLinks: false))?.kind == .socket
    }
}
