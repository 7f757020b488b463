import Foundation
import KeychainCrypto
import KeychainTPM
import KeychainTestSupport
import XCTest

/// The device key sealed by a TPM (docs/tpm.md), against real software TPMs: one `swtpm` per
/// machine, the real daemon, real vault files.
final class TPMDeviceKeyTests: XCTestCase {
    let pass = "tpm pass phrase"
    let sealedMagic = Data("KCFSTPM".utf8) + Data([0])

    /// A harness whose daemon and CLI reach `tpm`; stopped (daemons, directory) at teardown.
    func machine(_ tpm: SoftwareTPM) throws -> CLIHarness {
        let h = try CLIHarness()
        h.environment["KEYCHAINFS_TCTI"] = tpm.tcti
        addTeardownBlock { h.tearDown() }
        return h
    }

    func startTPM() throws -> SoftwareTPM {
        let tpm = try SoftwareTPM()
        addTeardownBlock { tpm.stop() }
        return tpm
    }

    func createSealed(_ h: CLIHarness, pcrs: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try h.run(["create-keychain", "--kdf", "interactive", "--device-key", "tpm2"] + pcrs, input: pass + "\n")
        XCTAssertEqual(r.status, 0, "create-keychain: \(r)", file: file, line: line)
        XCTAssertTrue(r.stderr.contains("ThisDeviceOnly items are bound to this TPM"), "\(r)", file: file, line: line)
    }

    func addItems(_ h: CLIHarness, file: StaticString = #filePath, line: UInt = #line) throws {
        for (account, cls) in [("tdo", "WhenUnlockedThisDeviceOnly"), ("always", "AlwaysThisDeviceOnly"), ("plain", "WhenUnlocked")] {
            let r = try h.run(["add-generic-password", "-s", "svc", "-a", account, "-w", "-", "--accessible", cls],
                              input: "\(account)-secret\n")
            XCTAssertEqual(r.status, 0, "add \(account): \(r)", file: file, line: line)
        }
    }

    func find(_ h: CLIHarness, _ account: String, env: [String: String] = [:]) throws -> CLIHarness.Result {
        try h.run(["find-generic-password", "-s", "svc", "-a", account, "-w"], env: env)
    }

    func deviceKeyFile(_ h: CLIHarness) -> Data { FileManager.default.contents(atPath: h.dir + "/device.key") ?? Data() }

    /// The daemon's log for the harness vault (why it did not start).
    func daemonLog(_ h: CLIHarness) -> String {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: h.runtimeDir)) ?? []
        return files.filter { $0.hasSuffix(".log") }
            .compactMap { try? String(contentsOfFile: h.runtimeDir + "/" + $0, encoding: .utf8) }.joined()
    }

    func testASealedDeviceKeyOpensThisDeviceOnlyItemsOnlyOnItsOwnTPM() throws {
        let tpmA = try startTPM()
        let a = try machine(tpmA)
        try createSealed(a)
        XCTAssertTrue(deviceKeyFile(a).starts(with: sealedMagic), "the device key file holds the sealed key, not 32 plain bytes")
        try addItems(a)
        // A restarted daemon unseals the key again: Always items before the unlock, the rest after.
        XCTAssertEqual(try a.run(["stop"]).status, 0)
        XCTAssertEqual(try find(a, "always").stdout, "always-secret\n")
        XCTAssertEqual(try a.run(["unlock-keychain"], input: pass + "\n").status, 0)
        XCTAssertEqual(try find(a, "tdo").stdout, "tdo-secret\n")
        XCTAssertEqual(try a.run(["stop"]).status, 0)

        // With its TPM gone the daemon does not start, and the error names the TCTI.
        let gone = try find(a, "always", env: ["KEYCHAINFS_TCTI": "swtpm:host=127.0.0.1,port=1"])
        XCTAssertEqual(gone.status, 53, "\(gone)")
        XCTAssertTrue(gone.stderr.contains("no TPM reachable through TCTI \"swtpm:host=127.0.0.1,port=1\""), "\(gone)")

        // Another machine: its own TPM, the vault file and the sealed key copied to it.
        let tpmB = try startTPM()
        let b = try machine(tpmB)
        let fm = FileManager.default
        for name in try fm.contentsOfDirectory(atPath: a.dir) where name.hasPrefix("test.vault") && !name.hasSuffix(".audit") {
            try fm.copyItem(atPath: a.dir + "/" + name, toPath: b.dir + "/" + name)
        }
        try fm.copyItem(atPath: a.dir + "/device.key", toPath: b.dir + "/device.key")
        let r = try find(b, "tdo")
        XCTAssertNotEqual(r.status, 0, "\(r)")
        XCTAssertEqual(r.stdout, "")
        XCTAssertTrue(daemonLog(b).contains("the sealed device key was made by another TPM"), daemonLog(b))
        XCTAssertTrue(r.stderr.contains("the sealed device key was made by another TPM"), "\(r)")
        let status = try b.run(["device-key", "status", "--json"])
        XCTAssertNotEqual(status.status, 0, "\(status)")
        let obj = b.jsonObject(status.stdout)
        XCTAssertEqual(obj["kind"] as? String, "tpm2")
        XCTAssertEqual(obj["unseals"] as? Bool, false)
        XCTAssertTrue((obj["error"] as? String ?? "").contains("this machine cannot open the vault's ThisDeviceOnly items"), "\(obj)")
        // No plain key was made in its place: the sealed file is still there, unchanged.
        XCTAssertEqual(deviceKeyFile(b), deviceKeyFile(a))

        // Giving that key up, after saying what is lost, opens the items that may leave the machine.
        let ask = try b.run(["device-key", "forget"])
        XCTAssertEqual(ask.status, 2, "\(ask)")
        XCTAssertTrue(ask.stderr.contains("ThisDeviceOnly items of \(b.vault) will never open again"), "\(ask)")
        XCTAssertEqual(deviceKeyFile(b), deviceKeyFile(a), "nothing changed without --yes")
        let forget = try b.run(["device-key", "forget", "--yes"])
        XCTAssertEqual(forget.status, 0, "\(forget)")
        XCTAssertEqual(try b.run(["unlock-keychain"], input: pass + "\n").status, 0)
        XCTAssertEqual(try find(b, "plain").stdout, "plain-secret\n")
        let tdo = try find(b, "tdo")
        XCTAssertEqual(tdo.status, 93, "bound to the other machine's TPM: \(tdo)")
        XCTAssertEqual(deviceKeyFile(b).count, 32, "a new plain key")
        XCTAssertEqual(FileManager.default.contents(atPath: b.dir + "/device.key.unsealable"), deviceKeyFile(a))
    }

    func testAPCRChangeStopsUnsealingUntilResealWithThePassphrase() throws {
        let tpm = try startTPM()
        let h = try machine(tpm)
        try createSealed(h, pcrs: ["--tpm-pcrs", "7"])
        try addItems(h)
        XCTAssertEqual(try h.run(["stop"]).status, 0)

        try tpm.extendPCR(7)  // a firmware update
        let r = try find(h, "always")
        XCTAssertEqual(r.status, 53, "errSecNotAvailable: \(r)")
        let forget = try h.run(["device-key", "forget", "--yes"])
        XCTAssertEqual(forget.status, 51, "changed PCRs are for reseal, not forget: \(forget)")
        XCTAssertEqual(r.stdout, "")
        XCTAssertTrue(daemonLog(h).contains("PCR 7 changed since it was sealed"), daemonLog(h))
        XCTAssertTrue(r.stderr.contains("its daemon did not start: cannot open vault: device key \(h.dir)/device.key: "
                                        + "the TPM refused to unseal the device key: PCR 7 changed"), "the CLI says why: \(r)")
        XCTAssertTrue(daemonLog(h).contains("keychainfs device-key reseal"), daemonLog(h))

        let sealedBefore = deviceKeyFile(h)
        let wrong = try h.run(["device-key", "reseal"], input: "not the passphrase\n")
        XCTAssertEqual(wrong.status, 51, "\(wrong)")
        XCTAssertEqual(deviceKeyFile(h), sealedBefore, "a failed reseal changes nothing")

        let reseal = try h.run(["device-key", "reseal"], input: pass + "\n")
        XCTAssertEqual(reseal.status, 0, "\(reseal)")
        XCTAssertEqual(reseal.stdout, "resealed \(h.dir)/device.key by the TPM, bound to PCR 7\n")
        XCTAssertEqual(try find(h, "always").stdout, "always-secret\n")
        XCTAssertEqual(try h.run(["unlock-keychain"], input: pass + "\n").status, 0)
        XCTAssertEqual(try find(h, "tdo").stdout, "tdo-secret\n")

        // Bound to the TPM only: a further PCR change no longer matters.
        let unbound = try h.run(["device-key", "reseal", "--tpm-pcrs", "none"])
        XCTAssertEqual(unbound.status, 0, "\(unbound)")
        let status = h.jsonObject(try h.run(["device-key", "status", "--json"]).stdout)
        XCTAssertEqual(status["pcrs"] as? [Int], [])
        XCTAssertEqual(status["recovery"] as? Bool, false)
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        try tpm.extendPCR(7)
        XCTAssertEqual(try find(h, "always").stdout, "always-secret\n")
    }

    /// Someone reading the bus (a relay that records every byte between the TSS and the TPM) sees
    /// the sealed objects go by, but not the device key: sealing, the unseal at each daemon start,
    /// the check after sealing and the recovery unseal of a reseal all run with parameter
    /// encryption in a session salted to the storage root key.
    func testTheDeviceKeyNeverCrossesTheTPMBusInTheClear() throws {
        let tpm = try startTPM()
        let tap = try TPMWireTap(forwardingTo: tpm)
        addTeardownBlock { tap.stop() }
        let h = try machine(tpm)
        h.environment["KEYCHAINFS_TCTI"] = tap.tcti
        try h.createVault(passphrase: pass)
        try addItems(h)
        let key = Array(deviceKeyFile(h))
        XCTAssertEqual(key.count, 32, "a plain key the test can look for")
        XCTAssertEqual(try h.run(["stop"]).status, 0)

        let seal = try h.run(["device-key", "seal", "--tpm-pcrs", "7"], input: pass + "\n")
        XCTAssertEqual(seal.status, 0, "\(seal)")
        XCTAssertEqual(try find(h, "always").stdout, "always-secret\n", "the daemon unsealed it at its start")
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        try tpm.extendPCR(7)
        let reseal = try h.run(["device-key", "reseal"], input: pass + "\n")
        XCTAssertEqual(reseal.status, 0, "the recovery copy opened: \(reseal)")
        XCTAssertEqual(try find(h, "always").stdout, "always-secret\n")
        XCTAssertEqual(try h.run(["stop"]).status, 0)

        // The tap saw the traffic: the sealed file's primary private area went to TPM2_Load.
        let sealed = Array(deviceKeyFile(h))
        let pubLength = Int(sealed[14]) << 24 | Int(sealed[15]) << 16 | Int(sealed[16]) << 8 | Int(sealed[17])
        let privStart = 18 + pubLength + 4
        let privLength = Int(sealed[privStart - 4]) << 24 | Int(sealed[privStart - 3]) << 16 | Int(sealed[privStart - 2]) << 8
            | Int(sealed[privStart - 1])
        XCTAssertTrue(tap.saw(Array(sealed[privStart..<(privStart + privLength)])), "the tap records what crosses the bus")
        XCTAssertGreaterThan(tap.recorded.count, 8)
        XCTAssertFalse(tap.saw(key), "the device key crossed the bus in the clear")
        XCTAssertFalse(tap.saw(key.reversed()), "the device key crossed the bus in the clear (reversed)")
    }

    func testSealMovesAnExistingPlainKeyIntoTheTPM() throws {
        let tpm = try startTPM()
        let h = try machine(tpm)
        try h.createVault(passphrase: pass)
        try addItems(h)
        XCTAssertEqual(deviceKeyFile(h).count, 32)
        XCTAssertEqual(try h.run(["stop"]).status, 0)

        let seal = try h.run(["device-key", "seal", "--tpm-pcrs", "7"], input: pass + "\n")
        XCTAssertEqual(seal.status, 0, "\(seal)")
        XCTAssertEqual(seal.stdout, "sealed \(h.dir)/device.key by the TPM, bound to PCR 7\n")
        XCTAssertTrue(deviceKeyFile(h).starts(with: sealedMagic))
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.dir + "/device.key.new"))
        let again = try h.run(["device-key", "seal"], input: pass + "\n")
        XCTAssertNotEqual(again.status, 0, "\(again)")
        XCTAssertTrue(again.stderr.contains("already sealed"), "\(again)")

        XCTAssertEqual(try find(h, "always").stdout, "always-secret\n")
        XCTAssertEqual(try h.run(["unlock-keychain"], input: pass + "\n").status, 0)
        XCTAssertEqual(try find(h, "tdo").stdout, "tdo-secret\n")
        let status = h.jsonObject(try h.run(["device-key", "status", "--json"]).stdout)
        XCTAssertEqual(status["kind"] as? String, "tpm2")
        XCTAssertEqual(status["pcrs"] as? [Int], [7])
        XCTAssertEqual(status["unseals"] as? Bool, true)
        XCTAssertEqual(status["vault-records"] as? String, "tpm2")

        // The vault now records the sealed kind: with the sealed file gone no plain key is made.
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        try FileManager.default.removeItem(atPath: h.dir + "/device.key")
        let r = try find(h, "always")
        XCTAssertEqual(r.status, 53, "\(r)")
        XCTAssertTrue(daemonLog(h).contains("is missing"), daemonLog(h))
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.dir + "/device.key"))
    }

    func testWithoutAReachableTPMNothingIsCreatedAndTheTCTIIsNamed() throws {
        let tpm = try startTPM()
        let h = try machine(tpm)
        tpm.stop()  // its port now answers nothing
        let r = try h.run(["create-keychain", "--kdf", "interactive", "--device-key", "tpm2"], input: pass + "\n")
        XCTAssertEqual(r.status, 53, "\(r)")
        XCTAssertTrue(r.stderr.contains("no TPM reachable through TCTI \"\(tpm.tcti)\""), "\(r)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.vault))
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.dir + "/device.key"), "no software fallback")

        let usage = try h.run(["create-keychain", "--tpm-pcrs", "7"], input: pass + "\n")
        XCTAssertEqual(usage.status, 2, "\(usage)")
        let badList = try h.run(["device-key", "seal", "--tpm-pcrs", "7,x"])
        XCTAssertEqual(badList.status, 2, "\(badList)")
    }

    func testDamagedNewerAndPlainKeyFilesAreNamedAndASealedKeyServesASecondVault() throws {
        let tpm = try startTPM()
        let h = try machine(tpm)
        let keyPath = h.dir + "/device.key"
        // A plain key the user's vaults share is not silently replaced by a sealed one.
        try h.createVault(passphrase: pass)
        let plain = try h.run(["device-key", "status", "--json"])
        XCTAssertEqual(plain.status, 0, "\(plain)")
        XCTAssertEqual(h.jsonObject(plain.stdout)["kind"] as? String, "file")
        let refused = try h.run(["create-keychain", "--kdf", "interactive", "--device-key", "tpm2", h.dir + "/second.vault"],
                                input: pass + "\n")
        XCTAssertEqual(refused.status, 45, "\(refused)")
        XCTAssertTrue(refused.stderr.contains("device-key seal"), "\(refused)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.dir + "/second.vault"))

        // Sealed, a second vault made with --device-key tpm2 uses the same sealed key.
        XCTAssertEqual(try h.run(["device-key", "seal"]).status, 0)
        let second = h.dir + "/second.vault"
        let made = try h.run(["create-keychain", "--kdf", "interactive", "--device-key", "tpm2", second], input: pass + "\n")
        XCTAssertEqual(made.status, 0, "\(made)")
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "svc", "-a", "b", "-w", "-", "--accessible", "AlwaysThisDeviceOnly", second],
                                 input: "b-secret\n").status, 0)
        XCTAssertEqual(try h.run(["stop", second]).status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "svc", "-a", "b", "-w", second]).stdout, "b-secret\n")
        XCTAssertEqual(try h.run(["stop", second]).status, 0)
        XCTAssertEqual(try h.run(["stop"]).status, 0)

        // A damaged sealed file and one of a newer format are named, and never replaced.
        let sealed = try XCTUnwrap(FileManager.default.contents(atPath: keyPath))
        for (bytes, words) in [(sealed.prefix(sealed.count - 3), "damaged"), (sealedMagic + Data([0, 9]) + sealed.dropFirst(10), "newer")] {
            chmod(keyPath, 0o600)
            try Data(bytes).write(to: URL(fileURLWithPath: keyPath))
            chmod(keyPath, 0o400)
            let status = try h.run(["device-key", "status"])
            XCTAssertEqual(status.status, 93, "\(status)")
            XCTAssertTrue(status.stderr.contains(words), "\(status)")
            let find = try h.run(["find-generic-password", "-s", "svc", "-a", "b", "-w", second])
            XCTAssertNotEqual(find.status, 0, "\(find)")
            XCTAssertEqual(FileManager.default.contents(atPath: keyPath), Data(bytes))
        }
    }

    /// Runs a tpm2-tools program against `tpm` in `dir`.
    func tpm2(_ tpm: SoftwareTPM, _ argv: [String], in dir: String) throws {
        let r = try Spawn.run(["/usr/bin/env", "-C", dir] + argv,
                              environment: ["TPM2TOOLS_TCTI": tpm.tcti, "PATH": "/usr/bin:/bin"], input: Data(), timeout: 60)
        XCTAssertEqual(r.status, 0, "\(argv): \(String(decoding: r.err, as: UTF8.self))")
    }

    /// A TPM without a resource manager serves every program on the machine: one that left its
    /// objects loaded can fill the TPM's few object slots. Loading the sealed key then fails
    /// with "out of memory for object contexts", which is no sign of another TPM: the error
    /// names the TPM's reason, and `device-key forget` (for keys gone for good) changes nothing.
    func testATPMOutOfObjectMemoryIsNotAnotherTPMAndForgetKeepsTheKey() throws {
        let tpm = try startTPM()
        let h = try machine(tpm)
        try createSealed(h)
        try addItems(h)
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        let sealed = deviceKeyFile(h)
        // Two objects left loaded by another program; the storage root key takes the third slot.
        for i in 0..<2 { try tpm2(tpm, ["tpm2_createprimary", "-C", "o", "-c", "other\(i).ctx"], in: h.dir) }

        let status = try h.run(["device-key", "status", "--json"])
        XCTAssertNotEqual(status.status, 0, "\(status)")
        let error = h.jsonObject(status.stdout)["error"] as? String ?? ""
        XCTAssertFalse(error.contains("another TPM"), "a full TPM is not another TPM: \(error)")
        XCTAssertTrue(error.contains("Esys_Load"), "the failing call is named: \(error)")
        let forget = try h.run(["device-key", "forget", "--yes"])
        XCTAssertNotEqual(forget.status, 0, "\(forget)")
        XCTAssertEqual(deviceKeyFile(h), sealed, "the sealed key stays")
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.dir + "/device.key.unsealable"))
        XCTAssertEqual(h.jsonObject(try h.run(["device-key", "status", "--json"]).stdout)["vault-records"] as? String, "tpm2")

        // Once the other program's objects are gone the key unseals again.
        try tpm2(tpm, ["tpm2_flushcontext", "-t"], in: h.dir)
        XCTAssertEqual(try find(h, "always").stdout, "always-secret\n")
    }

    /// A sealed object that unseals to other than 32 bytes (a file sealed by another tool, or
    /// by a damaged build) is not a device key: every verb names it, none stops on a trap.
    func testAnUnsealedSecretOfAnotherLengthIsRefusedByName() throws {
        let tpm = try startTPM()
        let h = try machine(tpm)
        try createSealed(h, pcrs: ["--tpm-pcrs", "7"])
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        let keyPath = h.dir + "/device.key"
        let short = try TPM(tcti: tpm.tcti).seal(try SecureBytes.random(count: 16), pcrs: [7],
                                                 recoveryAuth: try SecureBytes.random(count: 32))
        chmod(keyPath, 0o600)
        try Data(short.encoded()).write(to: URL(fileURLWithPath: keyPath))
        chmod(keyPath, 0o400)
        for args in [["device-key", "reseal"], ["device-key", "status"]] {
            let r = try h.run(args, input: pass + "\n")
            XCTAssertEqual(r.status, 93, "errSecDecode: \(args) \(r)")
            XCTAssertTrue((r.stdout + r.stderr).contains("the TPM unsealed 16 bytes, not a 32-byte device key"), "\(args) \(r)")
        }
        XCTAssertEqual(deviceKeyFile(h), Data(short.encoded()), "nothing was resealed")
        let r = try find(h, "always")
        XCTAssertNotEqual(r.status, 0, "\(r)")
        XCTAssertTrue(daemonLog(h).contains("the TPM unsealed 16 bytes, not a 32-byte device key"), daemonLog(h))
    }

    /// Each writer of the sealed file (seal, reseal, create-keychain) writes a temporary file of
    /// its own: a reseal neither removes nor renames the one another writer is still filling,
    /// so that writer's rename installs a whole file, never an empty one.
    func testAResealLeavesAnotherWritersTemporaryFileAlone() throws {
        let tpm = try startTPM()
        let h = try machine(tpm)
        try createSealed(h)
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        let keyPath = h.dir + "/device.key"
        let theirs = Data("another writer's sealed file, half written".utf8)
        XCTAssertTrue(FileManager.default.createFile(atPath: keyPath + ".new", contents: theirs, attributes: [.posixPermissions: 0o400]))
        let reseal = try h.run(["device-key", "reseal"], input: pass + "\n")
        XCTAssertEqual(reseal.status, 0, "\(reseal)")
        XCTAssertEqual(FileManager.default.contents(atPath: keyPath + ".new"), theirs, "the other writer's file is untouched")
        XCTAssertTrue(deviceKeyFile(h).starts(with: sealedMagic))
        let status = h.jsonObject(try h.run(["device-key", "status", "--json"]).stdout)
        XCTAssertEqual(status["unseals"] as? Bool, true)
        XCTAssertEqual(status["vault-made-with-it"] as? Bool, true)
        let names = try FileManager.default.contentsOfDirectory(atPath: h.dir).filter { $0.hasPrefix("device.key") }
        XCTAssertEqual(names.sorted(), ["device.key", "device.key.new"], "no temporary file of the reseal is left")
    }

    /// PCR 16 (debug) and PCR 23 (application) can be reset by any program at locality 0
    /// (TPM2_PCR_Reset) and extended again: after a change anyone puts back the value a key was
    /// sealed to (usually the reset value, zeros), so a policy on them binds nothing. Every way
    /// to seal refuses them, naming them.
    func testPCRsAnyProgramCanResetAreRefused() throws {
        let tpm = try startTPM()
        let h = try machine(tpm)
        for list in ["16", "7,23"] {
            let r = try h.run(["create-keychain", "--kdf", "interactive", "--device-key", "tpm2", "--tpm-pcrs", list], input: pass + "\n")
            XCTAssertEqual(r.status, 2, "\(list): \(r)")
            XCTAssertTrue(r.stderr.contains("PCR 16 and 23 can be reset by any program"), "\(r)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: h.vault))
            XCTAssertFalse(FileManager.default.fileExists(atPath: h.dir + "/device.key"))
        }
        try h.createVault(passphrase: pass)
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        let plain = deviceKeyFile(h)
        let seal = try h.run(["device-key", "seal", "--tpm-pcrs", "16"], input: pass + "\n")
        XCTAssertEqual(seal.status, 2, "\(seal)")
        XCTAssertEqual(deviceKeyFile(h), plain, "still the plain key")
        XCTAssertThrowsError(try TPM(tcti: tpm.tcti).seal(try SecureBytes.random(count: 32), pcrs: [23],
                                                          recoveryAuth: try SecureBytes.random(count: 32)))
    }

    /// Each sealed key given up keeps a name of its own (`PATH.unsealable`, then
    /// `PATH.unsealable.2`, ...): a second forget does not overwrite the first one's file, which
    /// still opens the ThisDeviceOnly items on the machine whose TPM sealed it.
    func testForgetNeverOverwritesAnEarlierForgottenKey() throws {
        let a = try machine(try startTPM())
        try createSealed(a)
        XCTAssertEqual(try a.run(["stop"]).status, 0)
        let b = try machine(try startTPM())
        let fm = FileManager.default
        for name in try fm.contentsOfDirectory(atPath: a.dir) where name.hasPrefix("test.vault") && !name.hasSuffix(".audit") {
            try fm.copyItem(atPath: a.dir + "/" + name, toPath: b.dir + "/" + name)
        }
        try fm.copyItem(atPath: a.dir + "/device.key", toPath: b.dir + "/device.key")
        let earlier = Data("an earlier forgotten sealed key".utf8)
        XCTAssertTrue(fm.createFile(atPath: b.dir + "/device.key.unsealable", contents: earlier, attributes: [.posixPermissions: 0o400]))
        let forget = try b.run(["device-key", "forget", "--yes"])
        XCTAssertEqual(forget.status, 0, "\(forget)")
        XCTAssertEqual(fm.contents(atPath: b.dir + "/device.key.unsealable"), earlier, "the earlier key is kept")
        XCTAssertEqual(fm.contents(atPath: b.dir + "/device.key.unsealable.2"), deviceKeyFile(a))
        XCTAssertTrue(forget.stdout.contains("(moved to \(b.dir)/device.key.unsealable.2)"), "\(forget)")
        XCTAssertFalse(fm.fileExists(atPath: b.dir + "/device.key"))
    }

    /// An active interposer that lets the unseal of a reseal through to the real TPM and then
    /// answers the sealing itself, with its own storage root key, would learn the device key
    /// from the encrypted Create (the session is salted to its key). Reseal seals only under the
    /// storage root key the old file names: it refuses, and the file stays as it was.
    func testResealRefusesAnotherStorageRootKeyThanTheOldFileNames() throws {
        let tpm = try startTPM()
        let h = try machine(tpm)
        try createSealed(h)
        try addItems(h)
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        let before = deviceKeyFile(h)
        let attacker = try startTPM()
        let interposer = try TPMInterposer(first: tpm, second: attacker, switchAfter: 1)
        addTeardownBlock { interposer.stop() }
        let reseal = try h.run(["device-key", "reseal"], input: pass + "\n", env: ["KEYCHAINFS_TCTI": interposer.tcti])
        XCTAssertEqual(reseal.status, 93, "errSecDecode, as another TPM: \(reseal)")
        XCTAssertEqual(deviceKeyFile(h), before, "nothing was sealed to the interposer's key")
        XCTAssertEqual(try find(h, "always").status, 0, "the real TPM still unseals it")
    }

    /// A vault that records a TPM-sealed key never runs on a plain key file found in the sealed
    /// file's place (restored from an old backup, or planted by someone who can write there): the
    /// daemon refuses to start, as when the file is missing, instead of wrapping new
    /// ThisDeviceOnly items under a key that is not the TPM's.
    func testAVaultThatRecordsASealedKeyRefusesAPlainKeyFile() throws {
        let tpm = try startTPM()
        let h = try machine(tpm)
        try createSealed(h)
        try addItems(h)
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        let keyPath = h.dir + "/device.key"
        let planted = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
        chmod(keyPath, 0o600)
        try planted.write(to: URL(fileURLWithPath: keyPath))
        chmod(keyPath, 0o400)
        let r = try find(h, "plain")
        XCTAssertEqual(r.status, 53, "errSecNotAvailable: \(r)")
        XCTAssertTrue(daemonLog(h).contains("holds a plain key"), daemonLog(h))
        let add = try h.run(["add-generic-password", "-s", "svc", "-a", "new", "-w", "-", "--accessible", "WhenUnlockedThisDeviceOnly"],
                            input: "new-secret\n")
        XCTAssertNotEqual(add.status, 0, "nothing is wrapped under the planted key: \(add)")
        XCTAssertEqual(deviceKeyFile(h), planted, "the file is left for the user to restore")
    }

    /// A TPM may have no SHA-256 bank allocated (firmware that allocates SHA-1 only): then
    /// TPM2_PolicyPCR over that bank covers no value, and a key "bound to PCR 7" would unseal
    /// after any change. Sealing checks that the TPM reads each listed PCR in the SHA-256 bank and
    /// refuses by name otherwise, with nothing created.
    func testSealingRefusesPCRsTheSHA256BankDoesNotHave() throws {
        let tpm = try startTPM()
        let h = try machine(tpm)
        try tpm2(tpm, ["tpm2_pcrallocate", "sha1:all+sha256:none"], in: h.dir)
        // The new allocation holds from the next power-on.
        let cycle = try Spawn.run(["/usr/bin/swtpm_ioctl", "-i", "--tcp", "127.0.0.1:\(tpm.port + 1)"],
                                  environment: ["PATH": "/usr/bin:/bin"], input: Data(), timeout: 60)
        XCTAssertEqual(cycle.status, 0, String(decoding: cycle.err, as: UTF8.self))
        let r = try h.run(["create-keychain", "--kdf", "interactive", "--device-key", "tpm2", "--tpm-pcrs", "7"], input: pass + "\n")
        XCTAssertNotEqual(r.status, 0, "\(r)")
        XCTAssertTrue(r.stderr.contains("no PCR 7 in its SHA-256 bank"), "\(r)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.vault))
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.dir + "/device.key"))
        // Bound to the TPM only, the key can still be sealed there.
        try createSealed(h, pcrs: ["--tpm-pcrs", "none"])
    }
}
