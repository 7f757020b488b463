import Foundation
import KeychainProtocol
import KeychainTestSupport
import Security
import XCTest

/// PRODUCT 8 / issue 7: after a lock the daemon's memory holds no plaintext of a WhenUnlocked
/// item and no passphrase. Root reads the daemon's whole writable memory from /proc/PID/mem
/// (the daemon is not dumpable; root's CAP_SYS_PTRACE still reads it).
final class HardeningMemoryTests: MountTestCase {
    /// Where the secrets went in, for the report.
    private var canaries: [(name: String, value: String)] = []

    private func canary(_ name: String, length: Int = 24) -> String {
        let c = Canary.make(length)
        canaries.append((name, c))
        return c
    }

    func testNoWhenUnlockedSecretOrPassphraseInDaemonMemoryAfterLock() throws {
        signal(SIGPIPE, SIG_IGN)
        // A vault of its own, with a distinctive passphrase; the harness vault's daemon stops.
        XCTAssertEqual(try h.run(["stop", h.vault]).status, 0)
        let passphrase = "pass-" + Canary.make(24)
        let vault = h.dir + "/memory.vault"
        try h.createVault(passphrase: passphrase, path: vault)
        h.environment["KEYCHAINFS_VAULT"] = vault
        // The passphrase also goes through unlock (and the lock before it).
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        XCTAssertEqual(try h.run(["unlock-keychain"], input: passphrase + "\n").status, 0)

        // The CLI: -w SECRET, -w - and -U, each read back with find -w.
        let argv = canary("cli-argv")
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "mem", "-a", "argv", "-w", argv]).status, 0)
        let stdin = canary("cli-stdin")
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "mem", "-a", "stdin", "-w", "-"], input: stdin + "\n").status, 0)
        let old = canary("cli-update-old"), new = canary("cli-update-new")
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "mem", "-a", "update", "-w", "-"], input: old).status, 0)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "mem", "-a", "update", "-w", "-", "-U"], input: new).status, 0)
        // Large secrets: replies and requests that grow while they are built (docs/threat-model.md).
        let large = canary("cli-large", length: 6000)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "mem", "-a", "large", "-w", "-"], input: large).status, 0)
        for (acct, value) in [("argv", argv), ("stdin", stdin), ("update", new), ("large", large)] {
            XCTAssertEqual(try h.run(["find-generic-password", "-s", "mem", "-a", acct, "-w"]).stdout, value + "\n")
            XCTAssertEqual(try h.run(["find-generic-password", "-s", "mem", "-a", acct, "-g"]).status, 0)
        }

        // The mount: a file written then read, one overwritten, one added by the CLI and read.
        let point = try mount()
        let written = canary("mount-write")
        let writtenLarge = canary("mount-write-large", length: 7000)
        XCTAssertEqual(FS.write(point + "/mem/written-large", writtenLarge), FS.ok)
        XCTAssertEqual(FS.read(point + "/mem/written-large").bytes, Array(writtenLarge.utf8))
        XCTAssertEqual(FS.write(point + "/mem/written", written), FS.ok)
        XCTAssertEqual(FS.read(point + "/mem/written").bytes, Array(written.utf8))
        let over1 = canary("mount-write-first"), over2 = canary("mount-write-second")
        XCTAssertEqual(FS.write(point + "/mem/overwritten", over1), FS.ok)
        XCTAssertEqual(FS.write(point + "/mem/overwritten", over2), FS.ok)
        XCTAssertEqual(FS.read(point + "/mem/overwritten").bytes, Array(over2.utf8))
        let mountRead = canary("mount-read")
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "mem", "-a", "mounted", "-w", "-"], input: mountRead).status, 0)
        XCTAssertEqual(FS.read(point + "/mem/mounted").bytes, Array(mountRead.utf8))

        // The Security module, from this process, at this vault's daemon.
        let savedSocket = ProcessInfo.processInfo.environment["KEYCHAINFS_SOCKET"]
        // The socket's name comes from the vault path; its directory is the harness's runtime dir.
        let socket = h.runtimeDir + "/" + URL(fileURLWithPath: Paths.socket(forVault: vault)).lastPathComponent
        XCTAssertTrue(FileManager.default.fileExists(atPath: socket), "the daemon listens at \(socket)")
        setenv("KEYCHAINFS_SOCKET", socket, 1)
        defer {
            if let savedSocket { setenv("KEYCHAINFS_SOCKET", savedSocket, 1) } else { unsetenv("KEYCHAINFS_SOCKET") }
        }
        let apiAdd = canary("api-add"), apiUpdate = canary("api-update", length: 5000)
        let base: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                   kSecAttrService as String: "mem", kSecAttrAccount as String: "api"]
        var add = base
        add[kSecValueData as String] = Data(apiAdd.utf8)
        var status = SecItemAdd(add as CFDictionary, nil)
        if status == errSecNotAvailable { status = SecItemAdd(add as CFDictionary, nil) }  // a stale connection of an earlier class
        XCTAssertEqual(status, errSecSuccess, "SecItemAdd")
        func apiRead() -> String? {
            var query = base
            query[kSecReturnData as String] = kCFBooleanTrue!
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess, let d = result as? Data else { return nil }
            return String(decoding: d, as: UTF8.self)
        }
        XCTAssertEqual(apiRead(), apiAdd)
        XCTAssertEqual(SecItemUpdate(base as CFDictionary, [kSecValueData as String: Data(apiUpdate.utf8)] as CFDictionary), errSecSuccess)
        XCTAssertEqual(apiRead(), apiUpdate)

        // Every secret once more, in one reply.
        let dump = try h.run(["dump-keychain", "-d"])
        XCTAssertEqual(dump.status, 0)
        for value in [argv, stdin, new, large, written, writtenLarge, over2, mountRead, apiUpdate] {
            XCTAssertTrue(dump.stdout.contains(value), "dump-keychain -d shows \(value)")
        }

        // A file kept open across the lock: the lock must wipe what it holds.
        let held = canary("mount-held-open")
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "mem", "-a", "held", "-w", "-"], input: held).status, 0)
        let fd = open(point + "/mem/held", O_RDONLY)
        XCTAssertGreaterThanOrEqual(fd, 0, "open held: \(FS.name(errno))")
        defer { if fd >= 0 { close(fd) } }
        XCTAssertEqual(FS.pread(fd, count: 100, offset: 0).bytes, Array(held.utf8))

        // Every item is WhenUnlocked (ak), so the lock must take all of them away.
        for item in try h.dump() {
            let attrs = item["attributes"] as? [String: Any] ?? [:]
            XCTAssertEqual(attrs["pdmn"] as? String, "ak", "\(attrs["acct"] ?? "?") is WhenUnlocked")
        }

        guard let pid = try h.daemonPID() else { return XCTFail("no daemon") }
        var needles: [(String, [UInt8])] = [("passphrase", Array(passphrase.utf8)), ("passphrase/utf16", utf16le(passphrase)),
                                            ("vault-path", Array(vault.utf8))]
        for c in canaries {
            let bytes = Array(c.value.utf8)
            if bytes.count <= 64 {
                needles.append((c.name, bytes))
                needles.append((c.name + "/utf16", utf16le(c.value)))
            } else {
                // Pieces of a long secret: a partial copy counts as a leak too.
                for at in [0, bytes.count / 2, bytes.count - 32] {
                    needles.append((c.name + "[\(at)..<\(at + 32)]", Array(bytes[at..<(at + 32)])))
                }
            }
        }

        // Control: the scan reads the daemon's heap (the vault path) and its guarded memory (the
        // open file's secret, decrypted at open into sodium_malloc memory, flags `dd`).
        let before = try ProcessMemory.scan(pid, for: needles)
        print("memory scan before lock (pid \(pid)): \(before.summary)")
        for hit in before.hits where hit.needle != "vault-path" { print("  before lock: \(hit.needle) in \(hit.region)") }
        XCTAssertFalse(before.hits(of: "vault-path").isEmpty, "control: the vault path is in the daemon's memory; the scan read nothing?")
        XCTAssertTrue(before.hits(of: "mount-held-open").contains { $0.region.guarded },
                      "control: the open file's secret is in the daemon's guarded memory while open; hits: \(before.hits(of: "mount-held-open"))")
        XCTAssertGreaterThan(before.bytesRead, 1 << 20)

        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "mem", "-a", "stdin", "-w"]).status, 36, "locked")
        let r = FS.pread(fd, count: 100, offset: 0)
        XCTAssertNil(r.bytes, "a read on a descriptor opened before the lock fails")
        XCTAssertEqual(r.errno, EACCES)
        XCTAssertEqual(try h.daemonPID(), pid, "the same daemon")

        let after = try ProcessMemory.scan(pid, for: needles)
        print("memory scan after lock (pid \(pid)): \(after.summary)")
        XCTAssertFalse(after.hits(of: "vault-path").isEmpty, "control: the vault path is still found after the lock")
        let leaks = after.hits.filter { $0.needle != "vault-path" }
        for leak in leaks { print("  LEAK after lock: \(leak)") }
        if leaks.isEmpty { print("  no canary and no passphrase after lock") }

        // libfuse's receive buffer (malloc'd by fuse_session_loop_mt, ordinary memory of about
        // 1 MiB) held the bytes of the last FUSE_WRITE each worker read: MountServer.write wipes
        // them once copied, so no mount-write canary is left there either.
        for leak in leaks {
            XCTFail("after lock the daemon's memory still holds \(leak)")
        }
    }
}
