import Foundation
import KeychainTestSupport
import Security
import XCTest

/// PRODUCT 2: protection classes through a lock (errSecInteractionNotAllowed).
final class SecItemConformanceLockTests: SecItemConformanceCase {
    /// Harness.createVault's default passphrase.
    let passphrase = "pass phrase 1"

    func lock(file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try h.run(["lock-keychain"])
        XCTAssertEqual(r.status, 0, "lock-keychain: \(r)", file: file, line: line)
    }

    func unlock(file: StaticString = #filePath, line: UInt = #line) {
        let r = try? h.run(["unlock-keychain"], input: passphrase + "\n")
        XCTAssertEqual(r?.status, 0, "unlock-keychain: \(String(describing: r))", file: file, line: line)
    }

    func testWhenUnlockedItemIsInteractionNotAllowedWhileLockedAndAfterFirstUnlockStillReads() throws {
        let service = unique()
        assertStatus(addPassword(service: service, account: "ak", data: Data("ak-secret".utf8)), errSecSuccess, "add ak")
        assertStatus(addPassword(service: service, account: "ck", data: Data("ck-secret".utf8),
                                 [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock]), errSecSuccess, "add ck")
        try lock()
        defer { unlock() }
        let locked = dataOf(genp(service, "ak"))
        assertStatus(locked.status, errSecInteractionNotAllowed, "WhenUnlocked secret while locked")
        XCTAssertNil(locked.data)
        // Its attributes are sealed under the same class key.
        var result: CFTypeRef?
        let attrs = genp(service, "ak").merging([kSecReturnAttributes as String: true]) { $1 }
        assertStatus(SecItemCopyMatching(attrs as CFDictionary, &result), errSecInteractionNotAllowed, "attributes while locked")
        XCTAssertNil(result)
        let open = dataOf(genp(service, "ck"))
        assertStatus(open.status, errSecSuccess, "AfterFirstUnlock secret while locked")
        XCTAssertEqual(open.data, Data("ck-secret".utf8))
    }

    func testAddingAWhenUnlockedItemWhileLockedIsInteractionNotAllowed() throws {
        let service = unique()
        try lock()
        defer { unlock() }
        assertStatus(addPassword(service: service, account: "ak", data: Data("x".utf8)), errSecInteractionNotAllowed, "add ak")
        assertStatus(addPassword(service: service, account: "ck", data: Data("y".utf8),
                                 [kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock]), errSecSuccess, "add ck")
    }

    func testUnlockMakesWhenUnlockedItemsReadableAgain() throws {
        let service = unique()
        assertStatus(addPassword(service: service, account: "ak", data: Data("ak-secret".utf8)), errSecSuccess)
        try lock()
        assertStatus(dataOf(genp(service)).status, errSecInteractionNotAllowed)
        unlock()
        XCTAssertEqual(dataOf(genp(service)).data, Data("ak-secret".utf8))
    }
}

/// How the module finds the daemon: KEYCHAINFS_SOCKET, else the default vault's socket, else
/// errSecNotAvailable. The module keeps its first connection for the life of the process, so
/// each case runs this test binary again, in a child process with its own environment, selecting
/// only `testChildProcessBody`.
final class SecItemConformanceDiscoveryTests: SecItemConformanceCase {
    static let childMode = ProcessInfo.processInfo.environment["SECITEM_CONFORMANCE_CHILD"]

    override class func setUp() {
        // In the child, no vault of its own: the environment the parent gave decides.
        if childMode != nil { return }
        super.setUp()
    }

    /// The body of the child processes; in the parent process (a normal run) it does nothing.
    func testChildProcessBody() throws {
        guard let mode = Self.childMode else { return }
        let env = ProcessInfo.processInfo.environment
        switch mode {
        case "unreachable":
            let service = unique()
            assertStatus(addPassword(service: service, account: "a", data: Data("x".utf8)), errSecNotAvailable, "add")
            var result: CFTypeRef?
            let query = genp(service).merging([kSecReturnData as String: true]) { $1 }
            assertStatus(SecItemCopyMatching(query as CFDictionary, &result), errSecNotAvailable, "copy")
            XCTAssertNil(result)
            assertStatus(SecItemUpdate(genp(service) as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary),
                         errSecNotAvailable, "update")
            assertStatus(SecItemDelete(genp(service) as CFDictionary), errSecNotAvailable, "delete")
        case "default-vault":
            let service = try XCTUnwrap(env["SECITEM_CONFORMANCE_SERVICE"])
            XCTAssertEqual(dataOf(genp(service, "parent")).data, Data("from-parent".utf8))
            assertStatus(addPassword(service: service, account: "child", data: Data("from-child".utf8)), errSecSuccess)
        default:
            XCTFail("unknown child mode \(mode)")
        }
    }

    /// Runs `testChildProcessBody` in a fresh process with the KEYCHAINFS_ variables replaced by `environment`.
    func runChild(_ mode: String, _ environment: [String: String],
                  file: StaticString = #filePath, line: UInt = #line) throws {
        let exe = CLIHarness.realPath("/proc/self/exe")
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("KEYCHAINFS_") }
        env.merge(environment) { $1 }
        env["SECITEM_CONFORMANCE_CHILD"] = mode
        let r = try Spawn.run([exe, "SecurityTests.SecItemConformanceDiscoveryTests/testChildProcessBody"],
                              environment: env, input: Data(), timeout: 120)
        let out = String(decoding: r.out, as: UTF8.self) + String(decoding: r.err, as: UTF8.self)
        XCTAssertFalse(r.timedOut, "child \(mode) timed out", file: file, line: line)
        XCTAssertEqual(r.status, 0, "child \(mode) failed:\n\(out)", file: file, line: line)
        XCTAssertTrue(out.contains("Executed 1 test, with 0 failures"), "child \(mode):\n\(out)", file: file, line: line)
        XCTAssertFalse(out.contains("skipped"), "child \(mode) skipped:\n\(out)", file: file, line: line)
    }

    func testUnreachableSocketIsNotAvailable() throws {
        try runChild("unreachable", ["KEYCHAINFS_SOCKET": h.dir + "/nobody-listens.sock"])
    }

    func testVaultWithoutDaemonIsNotAvailableAndNoDaemonIsStarted() throws {
        let vault = h.dir + "/absent.vault"
        try runChild("unreachable", ["KEYCHAINFS_VAULT": vault, "KEYCHAINFS_RUNTIME_DIR": h.runtimeDir])
        XCTAssertFalse(FileManager.default.fileExists(atPath: vault), "the module never creates a vault")
    }

    func testWithoutSocketVariableTheDefaultVaultsDaemonIsUsed() throws {
        let service = unique()
        assertStatus(addPassword(service: service, account: "parent", data: Data("from-parent".utf8)), errSecSuccess)
        try runChild("default-vault", ["KEYCHAINFS_VAULT": h.vault, "KEYCHAINFS_RUNTIME_DIR": h.runtimeDir,
                                       "SECITEM_CONFORMANCE_SERVICE": service])
        XCTAssertEqual(dataOf(genp(service, "child")).data, Data("from-child".utf8), "the child used this daemon")
    }
}

/// PRODUCT 2: presence-gated items through SecItem once an approval program is configured; the
/// kSecUseAuthenticationUI values as Apple documents them.
final class SecItemConformanceApprovalTests: SecItemConformanceCase {
    var approval: ScriptedApprovalProgram!
    var program: String { approval.path }
    var calls: String { approval.calls }

    override func setUpWithError() throws {
        try super.setUpWithError()
        approval = try ScriptedApprovalProgram(in: h.dir)
        let r = try h.run(["set-keychain-settings", "--approval-program", program, "--approval-timeout", "10"])
        XCTAssertEqual(r.status, 0, "set-keychain-settings: \(r)")
    }

    func say(_ text: String) throws { try approval.say(text) }

    var callCount: Int { approval.callLines.count }

    /// A presence-gated generic password of a fresh service.
    func addGated(_ flags: SecAccessControlCreateFlags, _ tag: String = #function,
                  file: StaticString = #filePath, line: UInt = #line) throws -> String {
        var error: Unmanaged<CFError>?
        let control = try XCTUnwrap(SecAccessControlCreateWithFlags(kCFAllocatorDefault, kSecAttrAccessibleAfterFirstUnlock,
                                                                    flags, &error), file: file, line: line)
        let service = unique(tag)
        assertStatus(addPassword(service: service, account: "a", data: Data("gated".utf8),
                                 [kSecAttrAccessControl as String: control]), errSecSuccess, "add", file: file, line: line)
        return service
    }

    func testApprovedPresenceReturnsTheSecret() throws {
        let service = try addGated(.userPresence)
        try say("yes")
        let (status, data) = dataOf(genp(service).merging([kSecUseOperationPrompt as String: "Read it"]) { $1 })
        assertStatus(status, errSecSuccess)
        XCTAssertEqual(data, Data("gated".utf8))
        XCTAssertEqual(callCount, 1, "the program was asked once")
    }

    func testDeniedPresenceIsUserCanceled() throws {
        let service = try addGated(.biometryAny)
        try say("no")
        let (status, data) = dataOf(genp(service))
        assertStatus(status, errSecUserCanceled)
        XCTAssertNil(data)
    }

    func testDevicePasscodeIsTheVaultPassphrase() throws {
        let service = try addGated(.devicePasscode)
        try say("passphrase")
        XCTAssertEqual(dataOf(genp(service)).data, Data("gated".utf8))
        let args = (try? String(contentsOfFile: calls, encoding: .utf8)) ?? ""
        XCTAssertTrue(args.hasPrefix("--reason passphrase"), args)
    }

    func testAuthenticationUIFailIsInteractionNotAllowedWithoutAsking() throws {
        let service = try addGated(.userPresence)
        try say("yes")
        let (status, data) = dataOf(genp(service).merging([kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail]) { $1 })
        assertStatus(status, errSecInteractionNotAllowed)
        XCTAssertNil(data)
        XCTAssertEqual(callCount, 0, "nobody was asked")
    }

    /// Apple asks for the application password beside any other constraint, `.or` included; no
    /// Linux caller can give it, so a yes from the program does not open the item and the
    /// program is not asked. Another gated item in the same search is still asked about.
    func testApplicationPasswordIsNotOpenedByThePresenceProgram() throws {
        try say("yes")
        for flags: SecAccessControlCreateFlags in [.applicationPassword, [.userPresence, .or, .applicationPassword]] {
            let service = try addGated(flags, "app-password-\(flags.rawValue)")
            let (status, data) = dataOf(genp(service))
            assertStatus(status, errSecInteractionNotAllowed, "\(flags.rawValue)")
            XCTAssertNil(data)
            XCTAssertEqual(callCount, 0, "nobody was asked")
        }
        let service = try addGated(.applicationPassword)
        var error: Unmanaged<CFError>?
        let presence = try XCTUnwrap(SecAccessControlCreateWithFlags(kCFAllocatorDefault, kSecAttrAccessibleAfterFirstUnlock,
                                                                     .userPresence, &error))
        assertStatus(addPassword(service: service, account: "b", data: Data("present".utf8),
                                 [kSecAttrAccessControl as String: presence]), errSecSuccess)
        let (s, r) = copyMatching(genp(service).merging([kSecReturnData as String: true,
                                                         kSecMatchLimit as String: kSecMatchLimitAll]) { $1 })
        assertStatus(s, errSecSuccess)
        XCTAssertEqual(r as? [Data], [Data("present".utf8)])
        XCTAssertEqual(callCount, 1, "asked about the presence item only")
    }

    /// kSecUseNoAuthenticationUI (deprecated, still in older wrappers) means the same as
    /// kSecUseAuthenticationUIFail.
    func testNoAuthenticationUIIsInteractionNotAllowedWithoutAsking() throws {
        let service = try addGated(.userPresence)
        try say("yes")
        let (status, data) = dataOf(genp(service).merging([kSecUseNoAuthenticationUI as String: true]) { $1 })
        assertStatus(status, errSecInteractionNotAllowed)
        XCTAssertNil(data)
        XCTAssertEqual(callCount, 0, "nobody was asked")
    }

    /// Apple: kSecUseAuthenticationUISkip silently skips items that need authentication.
    func testAuthenticationUISkipSkipsGatedItems() throws {
        let service = try addGated(.userPresence)
        try say("yes")
        assertStatus(addPassword(service: service, account: "open", data: Data("open".utf8)), errSecSuccess)
        let skip = [kSecUseAuthenticationUI as String: kSecUseAuthenticationUISkip]
        // Beside a readable item, the gated one is left out.
        let (s1, r1) = copyMatching(genp(service).merging(skip) { $1 }.merging([
            kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitAll]) { $1 })
        assertStatus(s1, errSecSuccess)
        XCTAssertEqual(r1 as? [Data], [Data("open".utf8)])
        XCTAssertEqual(callCount, 0, "nobody was asked")
        // Alone, it is as if it were not there.
        let (s2, r2) = copyMatching(genp(service, "a").merging(skip) { $1 }.merging([kSecReturnData as String: true]) { $1 })
        XCTAssertNil(r2)
        assertStatus(s2, errSecItemNotFound)
        XCTAssertEqual(callCount, 0, "nobody was asked")
    }
}
