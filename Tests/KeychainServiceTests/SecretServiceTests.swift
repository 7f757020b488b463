import Foundation
import KeychainTestSupport
import XCTest

/// The Secret Service (`keychainfs secret-service`) driven by real clients on a private session
/// bus: Debian's secret-tool (libsecret) and Python's secretstorage and keyring, against a real
/// daemon and vault, with the CLI on the other side.
final class SecretServiceTests: XCTestCase {
    var harness: CLIHarness!
    var bus: SessionBus!

    override func setUpWithError() throws {
        for tool in ["/usr/bin/dbus-daemon", "/usr/bin/secret-tool", "/usr/bin/dbus-send"] where access(tool, X_OK) != 0 {
            throw XCTSkip("\(tool) is not installed (scripts/setup.sh installs it)")
        }
        harness = try CLIHarness()
        try harness.createVault()
        bus = try SessionBus(harness: harness)
    }

    override func tearDown() {
        bus?.stop()
        harness?.tearDown()
    }

    /// A name unique to this run, so items of other tests never match.
    func unique(_ what: String) -> String { "\(what)-\(UUID().uuidString.prefix(8))" }

    func testSecretToolStoreLookupClearAndTheCLISeesTheSameItem() throws {
        try bus.startProvider()
        let service = unique("svc"), account = unique("acct")
        let store = bus.run(["/usr/bin/secret-tool", "store", "--label", "My label", "service", service, "account", account],
                            input: "s3cret over dbus")
        XCTAssertEqual(store.status, 0, "store: \(store)")
        let lookup = bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", account])
        XCTAssertEqual(lookup.status, 0, "lookup: \(lookup)")
        XCTAssertEqual(lookup.stdout, "s3cret over dbus")

        // The same item through the CLI: service and account from the attributes, label as given.
        let find = try harness.run(["find-generic-password", "-s", service, "-a", account, "-w"])
        XCTAssertEqual(find.status, 0, "find: \(find)")
        XCTAssertEqual(find.stdout, "s3cret over dbus\n")
        let json = try harness.run(["find-generic-password", "-s", service, "-a", account, "--json"])
        XCTAssertTrue(json.stdout.contains("\"labl\":\"My label\""), json.stdout)

        // Storing again with the same attributes replaces the secret (one item, new value).
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "store", "--label", "L2", "service", service, "account", account],
                               input: "second").status, 0)
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", account]).stdout, "second")
        let all = bus.run(["/usr/bin/secret-tool", "search", "--all", "service", service])
        XCTAssertEqual(all.stdout.components(separatedBy: "\nsecret = ").count - 1, 1, "one item: \(all)")

        let clear = bus.run(["/usr/bin/secret-tool", "clear", "service", service, "account", account])
        XCTAssertEqual(clear.status, 0, "clear: \(clear)")
        let gone = bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", account])
        XCTAssertNotEqual(gone.status, 0)
        XCTAssertEqual(gone.stdout, "")
        XCTAssertEqual(try harness.run(["find-generic-password", "-s", service, "-a", account]).status, 44)
    }

    func testAnItemAddedByTheCLIIsFoundBySecretToolSearch() throws {
        try bus.startProvider()
        let service = unique("cli"), account = unique("bob")
        XCTAssertEqual(try harness.run(["add-generic-password", "-s", service, "-a", account, "-l", "from the CLI", "-w", "-"],
                                       input: "cli secret\n").status, 0)
        let search = bus.run(["/usr/bin/secret-tool", "search", "--all", "service", service])
        XCTAssertEqual(search.status, 0, "search: \(search)")
        XCTAssertTrue(search.stdout.contains("secret = cli secret\n"), search.stdout)
        XCTAssertTrue(search.stdout.contains("label = from the CLI\n"), search.stdout)
        // Its attributes follow the documented rule: service = svce, account = username = acct.
        XCTAssertTrue(search.stderr.contains("attribute.account = \(account)\n") || search.stdout.contains("attribute.account = \(account)\n"),
                      "\(search)")
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "username", account]).stdout, "cli secret")
    }

    func testPythonSecretStorageAndKeyringStoreAndRead() throws {
        guard bus.python("import secretstorage, keyring").status == 0 else {
            throw XCTSkip("python3-secretstorage and python3-keyring are not installed (scripts/setup.sh)")
        }
        try bus.startProvider()
        let service = unique("py"), user = unique("u")
        let r = bus.python("""
        import secretstorage
        from keyring.backends import SecretService
        c = secretstorage.dbus_init()
        col = secretstorage.get_default_collection(c)
        item = col.create_item("py label", {"service": "\(service)", "username": "\(user)", "extra": "x"}, b"py secret", replace=True)
        print(item.get_label(), sorted(item.get_attributes().items()), item.get_secret().decode())
        print(len(list(col.search_items({"extra": "x", "service": "\(service)"}))))
        kr = SecretService.Keyring()
        kr.set_password("\(service)-k", "\(user)", "keyring pw")
        print(kr.get_password("\(service)-k", "\(user)"))
        kr.delete_password("\(service)-k", "\(user)")
        print(kr.get_password("\(service)-k", "\(user)"))
        """)
        XCTAssertEqual(r.status, 0, "python: \(r)")
        XCTAssertEqual(r.stdout, """
        py label [('extra', 'x'), ('service', '\(service)'), ('username', '\(user)')] py secret
        1
        keyring pw
        None

        """)
        let find = try harness.run(["find-generic-password", "-s", service, "-a", user, "-w"])
        XCTAssertEqual(find.stdout, "py secret\n", "\(find)")
    }

    func testDHSessionCarriesSecretsEncryptedAndPlainStillWorks() throws {
        guard bus.python("import secretstorage").status == 0 else { throw XCTSkip("python3-secretstorage is not installed") }
        try bus.startProvider()
        let service = unique("dh")
        // secretstorage's own DH and AES (an independent implementation) against ours; the value
        // on the bus is ciphertext: 16-byte blocks, not the secret.
        let r = bus.python("""
        import secretstorage
        from secretstorage.util import open_session, DBusAddress, SS_PATH, SS_PREFIX
        from jeepney import new_method_call
        c = secretstorage.dbus_init()
        s = open_session(c)
        print(s.encrypted)
        col = secretstorage.get_default_collection(c, session=s)
        item = col.create_item("dh", {"service": "\(service)"}, b"dh secret", replace=True)
        print(item.get_secret().decode())
        msg = new_method_call(DBusAddress(item.item_path, "org.freedesktop.secrets", SS_PREFIX + "Item"), "GetSecret", "o", (s.object_path,))
        (secret,) = c.send_and_get_reply(msg).body
        print(len(secret[1]), len(secret[2]), b"dh secret" in secret[2])
        plain = new_method_call(DBusAddress(SS_PATH, "org.freedesktop.secrets", SS_PREFIX + "Service"), "OpenSession", "sv", ("plain", ("s", "")))
        (_, path) = c.send_and_get_reply(plain).body
        msg = new_method_call(DBusAddress(item.item_path, "org.freedesktop.secrets", SS_PREFIX + "Item"), "GetSecret", "o", (path,))
        (secret,) = c.send_and_get_reply(msg).body
        print(secret[2].decode(), secret[3])
        """)
        XCTAssertEqual(r.stdout, "True\ndh secret\n16 16 False\ndh secret text/plain\n", "\(r)")
    }

    func testASecondProviderAndAMissingBusExit53() throws {
        try bus.startProvider()
        let second = bus.run([CLIHarness.binary, "secret-service"], timeout: 20)
        XCTAssertEqual(second.status, 53, "\(second)")
        XCTAssertTrue(second.stderr.contains("no Secret Service: sd_bus_request_name org.freedesktop.secrets"), second.stderr)
        var env = harness.environment
        env["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=" + harness.dir + "/no-such-bus"
        let none = try Spawn.run([CLIHarness.binary, "secret-service"], environment: env, input: Data(), timeout: 20)
        XCTAssertEqual(none.status, 53, String(decoding: none.err, as: UTF8.self))
    }

    func testTheBusStartsTheProviderFromTheShippedActivationFile() throws {
        // The shipped file, with Exec pointing at the binary under test.
        let shipped = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("mount-helpers/dbus/org.freedesktop.secrets.service").path
        let text = try String(contentsOfFile: shipped, encoding: .utf8)
        XCTAssertTrue(text.contains("Exec=/usr/local/bin/keychainfs secret-service\n"))
        try text.replacingOccurrences(of: "/usr/local/bin/keychainfs", with: CLIHarness.binary)
            .write(toFile: bus.serviceDirectory + "/org.freedesktop.secrets.service", atomically: true, encoding: .utf8)
        XCTAssertFalse(bus.hasOwner("org.freedesktop.secrets"))
        let service = unique("activated")
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "store", "--label", "A", "service", service, "account", "a"],
                               input: "started by the bus").status, 0)
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", "a"]).stdout, "started by the bus")
        XCTAssertEqual(bus.activatedProviders().count, 1)
        bus.stop()
        XCTAssertEqual(bus.activatedProviders(), [], "the provider ends with its bus")
    }

    func testLockedVaultRefusesLookupsAndUnlockPromptIsDismissed() throws {
        try bus.startProvider()
        let service = unique("locked"), account = unique("a")
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "store", "--label", "L", "service", service, "account", account],
                               input: "hidden").status, 0)
        XCTAssertEqual(try harness.run(["lock-keychain"]).status, 0)
        let lookup = bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", account])
        XCTAssertNotEqual(lookup.status, 0)
        XCTAssertEqual(lookup.stdout, "")
        XCTAssertTrue(lookup.stderr.contains("locked"), "\(lookup)")
        // Unlock needs the passphrase, which this service cannot ask for: the prompt completes
        // dismissed (secretstorage's unlock() returns True for a dismissed prompt).
        if bus.python("import secretstorage").status == 0 {
            let r = bus.python("""
            import secretstorage
            col = secretstorage.get_default_collection(secretstorage.dbus_init())
            print(col.is_locked(), col.unlock(), col.is_locked())
            """)
            XCTAssertEqual(r.stdout, "True True True\n", "\(r)")
        }
        XCTAssertEqual(try harness.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", account]).stdout, "hidden")
    }

    func testUnlockPromptRunsTheApprovalProgramWhichGivesThePassphrase() throws {
        guard bus.python("import secretstorage").status == 0 else { throw XCTSkip("python3-secretstorage is not installed") }
        // A stand-in for an unlock dialog: answers from a file, records its arguments.
        let program = harness.dir + "/unlock.sh", answer = harness.dir + "/answer", calls = harness.dir + "/calls"
        try """
            #!/bin/sh
            echo "$@" >> \(calls)
            case "$(cat \(answer))" in
              give) echo "pass phrase 1"; exit 0;;
              wrong) echo "guess"; exit 0;;
              *) exit 1;;
            esac
            """.write(toFile: program, atomically: true, encoding: .utf8)
        chmod(program, 0o755)
        XCTAssertEqual(try harness.run(["set-keychain-settings", "--approval-program", program]).status, 0)
        try bus.startProvider()
        let service = unique("unlock"), account = unique("a")
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "store", "--label", "L", "service", service, "account", account],
                               input: "behind the lock").status, 0)
        XCTAssertEqual(try harness.run(["lock-keychain"]).status, 0)
        let unlock = """
            import secretstorage
            col = secretstorage.get_default_collection(secretstorage.dbus_init())
            print(col.unlock(), col.is_locked())
            """
        // Refused, or a wrong passphrase: the prompt is dismissed, the vault stays locked and
        // secret-tool still gets no secret.
        for refusal in ["no", "wrong"] {
            try refusal.write(toFile: answer, atomically: true, encoding: .utf8)
            XCTAssertEqual(bus.python(unlock).stdout, "True True\n", refusal)
            let lookup = bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", account])
            XCTAssertNotEqual(lookup.status, 0)
            XCTAssertEqual(lookup.stdout, "")
        }
        // The program gives the passphrase: unlocked (not dismissed), the secret reads.
        try "give".write(toFile: answer, atomically: true, encoding: .utf8)
        XCTAssertEqual(bus.python(unlock).stdout, "False False\n")
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", account]).stdout, "behind the lock")
        let args = try String(contentsOfFile: calls, encoding: .utf8)
        XCTAssertTrue(args.hasPrefix("--reason unlock --label keychain --uid "), args)
        XCTAssertFalse(args.contains("pass phrase"))
    }

    func testUnlockPromptAsksWithThePinentryTheVaultNames() throws {
        guard bus.python("import secretstorage").status == 0 else { throw XCTSkip("python3-secretstorage is not installed") }
        // A scripted pinentry (the Assuan protocol): cancels, or gives the passphrase
        // %-escaped, as a file says; records the commands it got.
        let program = harness.dir + "/pinentry-fake", answer = harness.dir + "/answer", calls = harness.dir + "/calls"
        try """
            #!/bin/sh
            echo 'OK Pleased to meet you'
            while IFS= read -r line; do
              echo "$line" >> \(calls)
              case "$line" in
                GETPIN) if [ "$(cat \(answer))" = give ]; then echo 'D pass%20phrase 1'; echo OK
                        else echo 'ERR 83886179 Operation cancelled <Pinentry>'; fi ;;
                BYE) echo OK; exit 0 ;;
                *) echo OK ;;
              esac
            done
            """.write(toFile: program, atomically: true, encoding: .utf8)
        chmod(program, 0o755)
        XCTAssertEqual(try harness.run(["set-keychain-settings", "--pinentry", program]).status, 0)
        try bus.startProvider()
        let service = unique("pinentry"), account = unique("a")
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "store", "--label", "L", "service", service, "account", account],
                               input: "behind the pinentry").status, 0)
        XCTAssertEqual(try harness.run(["lock-keychain"]).status, 0)
        let unlock = """
            import secretstorage
            col = secretstorage.get_default_collection(secretstorage.dbus_init())
            print(col.unlock(), col.is_locked())
            """
        // Cancelled: dismissed, still locked.
        try "cancel".write(toFile: answer, atomically: true, encoding: .utf8)
        XCTAssertEqual(bus.python(unlock).stdout, "True True\n")
        XCTAssertNotEqual(bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", account]).status, 0)
        // The passphrase typed: unlocked, the secret reads.
        try "give".write(toFile: answer, atomically: true, encoding: .utf8)
        XCTAssertEqual(bus.python(unlock).stdout, "False False\n")
        XCTAssertEqual(bus.run(["/usr/bin/secret-tool", "lookup", "service", service, "account", account]).stdout, "behind the pinentry")
        let sent = try String(contentsOfFile: calls, encoding: .utf8)
        XCTAssertTrue(sent.contains("GETPIN\n"), sent)
        XCTAssertFalse(sent.contains("pass phrase"), "the passphrase goes one way only")
    }

    func testOpenSessionsAreBoundedPerConnectionAndPerUser() throws {
        guard bus.python("import jeepney").status == 0 else { throw XCTSkip("python3-jeepney is not installed") }
        try bus.startProvider()
        // 64 per connection, then LimitsExceeded until one is closed; 1024 for all connections of
        // the uid together; the sessions of a connection that leaves are dropped.
        let r = bus.python("""
        import time
        from jeepney import new_method_call, DBusAddress
        from jeepney.io.blocking import open_dbus_connection
        from jeepney.wrappers import unwrap_msg
        svc = DBusAddress("/org/freedesktop/secrets", "org.freedesktop.secrets", "org.freedesktop.Secret.Service")
        def open_session(c):
            try:
                return unwrap_msg(c.send_and_get_reply(new_method_call(svc, "OpenSession", "sv", ("plain", ("s", "")))))[1]
            except Exception as e:
                return e.name
        a = open_dbus_connection("SESSION")
        paths = [open_session(a) for _ in range(64)]
        print(len(set(p for p in paths if p.startswith("/org/"))), open_session(a))
        unwrap_msg(a.send_and_get_reply(new_method_call(
            DBusAddress(paths[0], "org.freedesktop.secrets", "org.freedesktop.Secret.Session"), "Close")))
        print(open_session(a).startswith("/org/freedesktop/secrets/session/"), open_session(a))
        others = [open_dbus_connection("SESSION") for _ in range(15)]
        print(sum(open_session(c).startswith("/org/") for c in others for _ in range(64)))
        late = open_dbus_connection("SESSION")
        print(open_session(late))
        a.close()
        for _ in range(200):
            got = open_session(late)
            if got.startswith("/org/"):
                break
            time.sleep(0.05)
        print(got.startswith("/org/"))
        """)
        XCTAssertEqual(r.stdout, """
        64 org.freedesktop.DBus.Error.LimitsExceeded
        True org.freedesktop.DBus.Error.LimitsExceeded
        960
        org.freedesktop.DBus.Error.LimitsExceeded
        True

        """, "\(r)")
    }
}
