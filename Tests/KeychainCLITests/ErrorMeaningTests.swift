import Foundation
import KeychainTestSupport
import Security
import XCTest

/// Errors keep Apple's sentence and status (scripts compare them) and say on the next line what
/// they mean here: a locked vault and its remedy, the vault whose daemon is missing.
final class ErrorMeaningTests: HarnessTestCase {
    func testALockedItemSaysTheVaultIsLocked() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "m", "-a", "a", "-w", "x", "--accessible", "WhenUnlocked"]).status, 0)
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        let r = try h.run(["find-generic-password", "-s", "m", "-w"])
        XCTAssertEqual(r.status, 36, "\(r)")
        XCTAssertEqual(r.stdout, "")
        XCTAssertEqual(r.stderr, "keychainfs: User interaction is not allowed.\nkeychainfs: the vault is locked: run keychainfs unlock-keychain\n")
        // Another vault than the default is named in the remedy.
        let named = try h.run(["find-generic-password", "-s", "m", "-w", h.vault], env: ["KEYCHAINFS_VAULT": h.dir + "/other.vault"])
        XCTAssertEqual(named.status, 36)
        XCTAssertEqual(named.stderr, "keychainfs: User interaction is not allowed.\nkeychainfs: the vault is locked: run keychainfs unlock-keychain \(h.vault)\n")
    }

    /// A user with no vault is told the path that was looked for and how to make one.
    func testAUserWithoutAVaultGetsThePathAndCreateKeychain() throws {
        // A user who is not root (root's default is /var/lib/keychainfs/login.vault), with no
        // KEYCHAINFS_VAULT: the per-user default under XDG_DATA_HOME.
        guard getuid() == 0, let nobody = getpwnam("nobody") else { throw XCTSkip("needs root and the user nobody") }
        let uid = nobody.pointee.pw_uid, gid = nobody.pointee.pw_gid
        let home = h.dir + "/home"
        try FileManager.default.createDirectory(atPath: home + "/data/keychainfs", withIntermediateDirectories: true)
        for p in [home, home + "/data", home + "/data/keychainfs"] { XCTAssertEqual(chown(p, uid, gid), 0) }
        var env = h.environment
        env.removeValue(forKey: "KEYCHAINFS_VAULT")
        env["XDG_DATA_HOME"] = home + "/data"
        env["HOME"] = home
        env["KEYCHAINFS_RUNTIME_DIR"] = home + "/run"
        let asNobody = ["/usr/bin/setpriv", "--reuid", String(uid), "--regid", String(gid), "--clear-groups"]
        let expected = home + "/data/keychainfs/login.vault"
        for args in [["find-generic-password", "-s", "db", "-w"], ["unlock-keychain"], ["show-keychain-info"]] {
            let r = try Spawn.run(asNobody + [CLIHarness.binary] + args, environment: env, input: Data("p\n".utf8), timeout: 30)
            XCTAssertEqual(r.status, 50, "\(args): \(String(decoding: r.err, as: UTF8.self))")
            XCTAssertEqual(String(decoding: r.err, as: UTF8.self), "keychainfs: The specified keychain could not be found.\n"
                           + "keychainfs: no vault at \(expected): create one with keychainfs create-keychain "
                           + "(or name yours: the last argument, or KEYCHAINFS_VAULT)\n", "\(args)")
        }
        // A vault named on the line is named in the remedy.
        let named = try h.run(["show-keychain-info", h.dir + "/elsewhere.vault"])
        XCTAssertEqual(named.status, 50, "\(named)")
        XCTAssertEqual(named.stderr, "keychainfs: The specified keychain could not be found.\n"
                       + "keychainfs: no vault at \(h.dir)/elsewhere.vault: create one with keychainfs create-keychain \(h.dir)/elsewhere.vault\n")
        XCTAssertEqual(h.daemons().filter { $0.vault != h.vault }.count, 0, "nothing was started")
    }

    func testAMissingDaemonNamesTheVault() throws {
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        // Root starts no daemon for a vault another user owns: that daemon must run as its owner.
        XCTAssertEqual(chown(h.vault, 65534, 65534), 0)
        let r = try h.run(["find-generic-password", "-s", "m", "-w"])
        XCTAssertEqual(r.status, 53, "\(r)")
        XCTAssertEqual(r.stderr, "keychainfs: No keychain is available. You may need to restart your computer.\nkeychainfs: no vault daemon for \(h.vault)\n")
        XCTAssertEqual(h.daemons().count, 0)
        XCTAssertEqual(chown(h.vault, 0, 0), 0)
    }

    func testSecurityKeepsApplesTextAndSaysWhichVaultHasNoDaemon() throws {
        let missing = h.dir + "/none.vault"
        let saved = ["KEYCHAINFS_VAULT", "KEYCHAINFS_SOCKET", "KEYCHAINFS_RUNTIME_DIR"].map { ($0, ProcessInfo.processInfo.environment[$0]) }
        defer { for (k, v) in saved { if let v { setenv(k, v, 1) } else { unsetenv(k) } } }
        setenv("KEYCHAINFS_VAULT", missing, 1)
        setenv("KEYCHAINFS_RUNTIME_DIR", h.runtimeDir, 1)
        unsetenv("KEYCHAINFS_SOCKET")
        let add: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "m",
                                  kSecValueData as String: Data("x".utf8)]
        XCTAssertEqual(SecItemAdd(add as CFDictionary, nil), errSecNotAvailable)
        XCTAssertEqual(SecCopyErrorMessageString(errSecNotAvailable, nil) as String?,
                       "No keychain is available. You may need to restart your computer.", "Apple's text, exactly")
        var error: Unmanaged<CFError>?
        let params: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
                                     kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true]]
        XCTAssertNil(SecKeyCreateRandomKey(params as CFDictionary, &error))
        let e = try XCTUnwrap(error?.takeRetainedValue())
        XCTAssertEqual(CFErrorGetCode(e), Int(errSecNotAvailable))
        XCTAssertEqual(e.userInfo[NSDebugDescriptionErrorKey] as? String,
                       "SecKeyCreateRandomKey: No keychain is available. You may need to restart your computer. (no vault daemon for KEYCHAINFS_VAULT=\(missing))")
    }
}
