import Foundation
import KeychainTestSupport
import XCTest

/// git-credential-keychainfs and docker-credential-keychainfs driven by real git (a clone over
/// HTTP with basic auth) and by their protocols, against a real daemon and vault, with the CLI
/// on the other side; and Debian's docker-credential-secretservice and git's own
/// git-credential-libsecret storing into `keychainfs secret-service`.
final class CredentialHelperTests: XCTestCase {
    var harness: CLIHarness!
    var server: GitHTTPServer?
    var bus: SessionBus?

    override func setUpWithError() throws {
        for tool in [CredentialHelpers.git, CredentialHelpers.docker] where access(tool, X_OK) != 0 {
            throw XCTSkip("\(tool) is not built")
        }
        harness = try CLIHarness()
        try harness.createVault()
    }

    override func tearDown() {
        server?.stop()
        bus?.stop()
        harness?.tearDown()
    }

    func unique(_ what: String) -> String { "\(what)-\(UUID().uuidString.prefix(8).lowercased())" }

    /// Runs a program with the harness's environment plus `extra`, `input` on standard input.
    func run(_ argv: [String], input: String = "", env extra: [String: String] = [:]) throws -> CLIHarness.Result {
        let r = try Spawn.run(argv, environment: harness.environment.merging(extra) { _, b in b }, input: Data(input.utf8), timeout: 120)
        XCTAssertFalse(r.timedOut, "\(argv) did not finish")
        return CLIHarness.Result(status: r.status, stdout: String(decoding: r.out, as: UTF8.self),
                                 stderr: String(decoding: r.err, as: UTF8.self), elapsed: r.elapsed)
    }

    func gitHelper(_ action: String, _ input: String) throws -> CLIHarness.Result {
        try run([CredentialHelpers.git, action], input: input)
    }

    func dockerHelper(_ action: String, _ input: String = "") throws -> CLIHarness.Result {
        try run([CredentialHelpers.docker, action], input: input)
    }

    // MARK: git

    func testGitHelperStoresGetsAndErasesInternetPasswordsTheCLIReads() throws {
        let host = unique("git") + ".example.com"
        let stored = try gitHelper("store", "protocol=https\nhost=\(host):8443\npath=team/repo.git\nusername=alice\npassword=s3 cr=et\n\n")
        XCTAssertEqual(stored.status, 0, "\(stored)")

        // The item osxkeychain would make: inet, srvr, ptcl 'htps', port, path, acct, atyp 'dflt'.
        let json = try harness.run(["find-internet-password", "-s", host, "--json"])
        XCTAssertEqual(json.status, 0, "\(json)")
        let attrs = harness.jsonObject(json.stdout)["attributes"] as? [String: Any] ?? [:]
        XCTAssertEqual(attrs["srvr"] as? String, host)
        XCTAssertEqual(attrs["ptcl"] as? String, "htps")
        XCTAssertEqual(attrs["port"] as? Int, 8443)
        XCTAssertEqual(attrs["path"] as? String, "team/repo.git")
        XCTAssertEqual(attrs["acct"] as? String, "alice")
        XCTAssertEqual(attrs["atyp"] as? String, "dflt")
        XCTAssertEqual(try harness.run(["find-internet-password", "-s", host, "-r", "htps", "-P", "8443", "-w"]).stdout, "s3 cr=et\n")

        // get: the password, and the username when git gave none; what git did not send matches any.
        XCTAssertEqual(try gitHelper("get", "protocol=https\nhost=\(host):8443\n").stdout, "password=s3 cr=et\nusername=alice\n")
        XCTAssertEqual(try gitHelper("get", "protocol=https\nhost=\(host)\nusername=alice\n\n").stdout, "password=s3 cr=et\n")
        let other = try gitHelper("get", "protocol=http\nhost=\(host):8443\n")
        XCTAssertEqual(other.status, 0, "not found is not an error: \(other)")
        XCTAssertEqual(other.stdout, "")
        XCTAssertEqual(try gitHelper("get", "protocol=https\nhost=\(host):8443\nusername=bob\n").stdout, "")

        // store of what is stored already (git stores after every authenticated operation)
        // changes nothing: the audit log shows a read, no add or update.
        let before = try harness.run(["audit"]).stdout.split(separator: "\n").count
        XCTAssertEqual(try gitHelper("store", "protocol=https\nhost=\(host):8443\npath=team/repo.git\nusername=alice\npassword=s3 cr=et\n").status, 0)
        let added = try harness.run(["audit"]).stdout.split(separator: "\n").dropFirst(before)
        XCTAssertEqual(added.map { $0.split(separator: "\t")[4] }, ["read"], "\(added)")

        // store again: the same item, a new secret.
        XCTAssertEqual(try gitHelper("store", "protocol=https\nhost=\(host):8443\npath=team/repo.git\nusername=alice\npassword=second\n").status, 0)
        XCTAssertEqual(try gitHelper("get", "protocol=https\nhost=\(host):8443\n").stdout, "password=second\nusername=alice\n")
        let dump = try harness.run(["find-internet-password", "-s", host, "--json"])
        XCTAssertEqual(dump.stdout.components(separatedBy: "\"srvr\"").count - 1, 1, "one item: \(dump.stdout)")

        // erase with a stale password leaves the item; with its own password, or none, it goes.
        XCTAssertEqual(try gitHelper("erase", "protocol=https\nhost=\(host):8443\nusername=alice\npassword=s3 cr=et\n").status, 0)
        XCTAssertEqual(try gitHelper("get", "protocol=https\nhost=\(host):8443\n").stdout, "password=second\nusername=alice\n")
        XCTAssertEqual(try gitHelper("erase", "protocol=https\nhost=\(host):8443\nusername=alice\npassword=second\n").status, 0)
        XCTAssertEqual(try harness.run(["find-internet-password", "-s", host]).status, 44)
        XCTAssertEqual(try gitHelper("erase", "protocol=https\nhost=\(host)\n").status, 0, "nothing to erase is no error")
    }

    /// A credential that lives in another of the caller's groups is updated where it lives, as
    /// `add-internet-password -U` does: no second item in the default group, and `get` answers
    /// the new password.
    func testGitHelperStoreUpdatesTheCredentialInTheGroupItLivesIn() throws {
        let host = unique("team") + ".example.com"
        XCTAssertEqual(try harness.run(["group", "add", "team"]).status, 0)
        let added = try harness.run(["add-internet-password", "-s", host, "-a", "alice", "-r", "htps", "-t", "dflt", "-w", "old",
                                     "--access-group", "team"])
        XCTAssertEqual(added.status, 0, "\(added)")
        XCTAssertEqual(try gitHelper("get", "protocol=https\nhost=\(host)\n").stdout, "password=old\nusername=alice\n")
        XCTAssertEqual(try gitHelper("store", "protocol=https\nhost=\(host)\nusername=alice\npassword=new\n").status, 0)
        XCTAssertEqual(try gitHelper("get", "protocol=https\nhost=\(host)\n").stdout, "password=new\nusername=alice\n")
        XCTAssertEqual(try harness.run(["find-internet-password", "-s", host, "-w", "--access-group", "team"]).stdout, "new\n")
        XCTAssertEqual(try harness.run(["find-internet-password", "-s", host, "--access-group", "default"]).status, 44,
                       "no second item in the default group")
    }

    func testGitHelperIgnoresOtherProtocolsAndRefusesBadInputAndALockedVault() throws {
        let host = unique("edge") + ".example.com"
        // A protocol Apple's codes cannot name: nothing stored, exit 0 (git goes to the next helper).
        XCTAssertEqual(try gitHelper("store", "protocol=gopher\nhost=\(host)\nusername=a\npassword=b\n").status, 0)
        XCTAssertEqual(try harness.run(["find-internet-password", "-s", host]).status, 44)
        // Apple's codes for git's protocols.
        XCTAssertEqual(try gitHelper("store", "protocol=ftp\nhost=\(host)\nusername=a\npassword=f\n").status, 0)
        XCTAssertEqual(try harness.run(["find-internet-password", "-s", host, "-r", "ftp ", "-w"]).stdout, "f\n")
        // Unknown keys are ignored; an incomplete credential is not stored; a line without '=' fails
        // and says so without echoing it.
        XCTAssertEqual(try gitHelper("store", "protocol=imaps\nhost=\(host)\nusername=a\nwwwauth[]=Basic\npassword=i\n").status, 0)
        XCTAssertEqual(try harness.run(["find-internet-password", "-s", host, "-r", "imps", "-w"]).stdout, "i\n")
        let incomplete = try gitHelper("store", "protocol=https\nhost=\(host)\npassword=nobody\n")
        XCTAssertEqual(incomplete.status, 1, "\(incomplete)")
        XCTAssertEqual(try harness.run(["find-internet-password", "-s", host, "-r", "htps"]).status, 44)
        let bad = try gitHelper("get", "protocol=https\nhost \(host) password-like-text\n")
        XCTAssertEqual(bad.status, 1)
        XCTAssertEqual(bad.stderr, "git-credential-keychainfs: bad input: a line without '='\n")
        let usage = try run([CredentialHelpers.git])
        XCTAssertEqual(usage.status, 1)
        XCTAssertEqual(usage.stderr, "usage: git credential-keychainfs <get|store|erase>\n")

        // A locked vault: WhenUnlocked items are not given out; the helper says why on stderr.
        XCTAssertEqual(try harness.run(["lock-keychain"]).status, 0)
        let locked = try gitHelper("get", "protocol=ftp\nhost=\(host)\n")
        XCTAssertEqual(locked.status, 1, "\(locked)")
        XCTAssertEqual(locked.stdout, "")
        XCTAssertTrue(locked.stderr.contains("failed to get: User interaction is not allowed. (-25308)"), locked.stderr)
        XCTAssertEqual(try harness.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        XCTAssertEqual(try gitHelper("get", "protocol=ftp\nhost=\(host)\n").stdout, "password=f\nusername=a\n")
    }

    /// A bare repository under `root` with one commit, served as `/repo.git`.
    func makeRepository(_ root: String) throws {
        let work = root + "/work"
        let env = ["HOME": root, "GIT_CONFIG_NOSYSTEM": "1", "XDG_CONFIG_HOME": root]
        for argv in [["/usr/bin/git", "init", "-q", "--bare", "-b", "main", root + "/repo.git"],
                     ["/usr/bin/git", "init", "-q", "-b", "main", work]] {
            XCTAssertEqual(try run(argv, env: env).status, 0)
        }
        try "served over http\n".write(toFile: work + "/README", atomically: true, encoding: .utf8)
        for argv in [["/usr/bin/git", "-C", work, "add", "README"],
                     ["/usr/bin/git", "-C", work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"],
                     ["/usr/bin/git", "-C", work, "push", "-q", root + "/repo.git", "main"]] {
            let r = try run(argv, env: env)
            XCTAssertEqual(r.status, 0, "\(argv): \(r)")
        }
    }

    func testGitCloneOverHTTPIsAnsweredByTheHelperAfterTheFirstPrompt() throws {
        guard access("/usr/bin/git", X_OK) == 0, access("/usr/lib/git-core/git-http-backend", X_OK) == 0,
              access("/usr/bin/python3", X_OK) == 0 else { throw XCTSkip("git, git-http-backend or python3 is missing (scripts/setup.sh)") }
        let root = harness.dir + "/git"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try makeRepository(root)
        let user = unique("dev"), password = "pw " + unique("clone")
        let server = try GitHTTPServer(root: root, login: user + ":" + password)
        self.server = server
        let url = "http://127.0.0.1:\(server.port)/repo.git"

        // GIT_ASKPASS stands in for the user: the first script answers (and notes each question),
        // the second only notes that it was asked and fails.
        let asked = root + "/asked"
        let answering = root + "/answer.sh", refusing = root + "/refuse.sh"
        try """
        #!/bin/sh
        echo "$1" >> \(asked)
        case "$1" in Username*) echo '\(user)' ;; *) cat \(root)/password ;; esac
        """.write(toFile: answering, atomically: true, encoding: .utf8)
        try password.write(toFile: root + "/password", atomically: true, encoding: .utf8)
        try "#!/bin/sh\necho \"$1\" >> \(asked)\nexit 1\n".write(toFile: refusing, atomically: true, encoding: .utf8)
        chmod(answering, 0o755)
        chmod(refusing, 0o755)
        func clone(_ dest: String, askpass: String) throws -> CLIHarness.Result {
            try run(["/usr/bin/git", "-c", "credential.helper=" + CredentialHelpers.git, "clone", "-q", url, root + "/" + dest],
                    env: ["HOME": root, "XDG_CONFIG_HOME": root, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
                          "GIT_ASKPASS": askpass, "SSH_ASKPASS": askpass])
        }
        func askedLines() -> [String] {
            ((try? String(contentsOfFile: asked, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        // First clone: the helper knows nothing, the user is asked once, git stores through the helper.
        let first = try clone("first", askpass: answering)
        XCTAssertEqual(first.status, 0, "\(first)")
        XCTAssertEqual(try String(contentsOfFile: root + "/first/README", encoding: .utf8), "served over http\n")
        XCTAssertEqual(askedLines().count, 2, "username and password asked once: \(askedLines())")
        XCTAssertEqual(server.requests.first, "401", "the server demanded credentials: \(server.requests)")
        let find = try harness.run(["find-internet-password", "-s", "127.0.0.1", "-a", user, "-r", "http", "-P", String(server.port), "-w"])
        XCTAssertEqual(find.stdout, password + "\n", "\(find)")

        // Second clone: nobody to ask; the helper answers.
        try FileManager.default.removeItem(atPath: asked)
        let second = try clone("second", askpass: refusing)
        XCTAssertEqual(second.status, 0, "\(second)")
        XCTAssertEqual(try String(contentsOfFile: root + "/second/README", encoding: .utf8), "served over http\n")
        XCTAssertEqual(askedLines(), [], "the user was not asked")
        XCTAssertFalse(server.requests.contains("bad"), "no wrong credentials were sent: \(server.requests)")

        // `git credential reject` erases through the helper; then a clone with nobody to ask fails.
        let reject = try run(["/usr/bin/git", "-c", "credential.helper=" + CredentialHelpers.git, "credential", "reject"],
                             input: "protocol=http\nhost=127.0.0.1:\(server.port)\nusername=\(user)\npassword=\(password)\n\n",
                             env: ["HOME": root, "XDG_CONFIG_HOME": root, "GIT_CONFIG_NOSYSTEM": "1"])
        XCTAssertEqual(reject.status, 0, "\(reject)")
        XCTAssertEqual(try harness.run(["find-internet-password", "-s", "127.0.0.1", "-a", user]).status, 44)
        let third = try clone("third", askpass: refusing)
        XCTAssertNotEqual(third.status, 0, "\(third)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: root + "/third/README"))
    }

    // MARK: docker

    func testDockerHelperRoundTripsJSONAndSaysNotFoundAsDockerExpects() throws {
        let registry = unique("reg") + ".example.com"
        let url = "https://\(registry):5000/v2/"
        let secret = "tok\"en \\ <&> é 😀 \n\t end"
        let body = try JSONSerialization.data(withJSONObject: ["ServerURL": url, "Username": "carol", "Secret": secret])
        let store = try dockerHelper("store", String(decoding: body, as: UTF8.self))
        XCTAssertEqual(store.status, 0, "\(store)")
        XCTAssertEqual(store.stdout, "")

        let get = try dockerHelper("get", url + "\n")
        XCTAssertEqual(get.status, 0, "\(get)")
        let back = harness.jsonObject(get.stdout)
        XCTAssertEqual(back["ServerURL"] as? String, url)
        XCTAssertEqual(back["Username"] as? String, "carol")
        XCTAssertEqual(back["Secret"] as? String, secret)
        XCTAssertTrue(get.stdout.hasSuffix("}\n") && get.stdout.contains("\\u003c\\u0026\\u003e"), "Go's escaping: \(get.stdout)")

        // The item osxkeychain would make, read by the CLI.
        let json = try harness.run(["find-internet-password", "-s", registry, "--json"])
        let attrs = harness.jsonObject(json.stdout)["attributes"] as? [String: Any] ?? [:]
        XCTAssertEqual(attrs["labl"] as? String, "Docker Credentials")
        XCTAssertEqual(attrs["ptcl"] as? String, "htps")
        XCTAssertEqual(attrs["port"] as? Int, 5000)
        XCTAssertEqual(attrs["path"] as? String, "/v2/")
        XCTAssertEqual(attrs["acct"] as? String, "carol")

        // A URL without a scheme is https; keys match without regard to case; store replaces.
        let bare = unique("bare") + ".example.com"
        XCTAssertEqual(try dockerHelper("store", "{\"serverurl\":\"\(bare)\",\"username\":\"dan\",\"secret\":\"one\",\"x\":[1,{}]}").status, 0)
        XCTAssertEqual(try dockerHelper("store", "{\"ServerURL\":\"\(bare)\",\"Username\":\"erin\",\"Secret\":\"two\"}").status, 0)
        XCTAssertEqual(try dockerHelper("get", "https://\(bare)").stdout,
                       "{\"ServerURL\":\"https://\(bare)\",\"Username\":\"erin\",\"Secret\":\"two\"}\n")
        // JSON escapes, surrogate pairs included, decode into the stored secret.
        XCTAssertEqual(try dockerHelper("store", #"{"ServerURL":"\#(bare)","Username":"erin","Secret":"\u00e9\ud83d\ude00\/\"q\\"}"#).status, 0)
        XCTAssertEqual(try dockerHelper("get", "https://\(bare)").stdout,
                       "{\"ServerURL\":\"https://\(bare)\",\"Username\":\"erin\",\"Secret\":\"é😀/\\\"q\\\\\"}\n")
        XCTAssertEqual(try dockerHelper("store", #"{"ServerURL":"\#(bare)","Username":"erin","Secret":"\ud83d\u0041\udc00"}"#).status, 0)
        XCTAssertEqual(harness.jsonObject(try dockerHelper("get", bare).stdout)["Secret"] as? String, "\u{FFFD}A\u{FFFD}",
                       "a lone half of a pair is U+FFFD; the escape after it stands")
        XCTAssertEqual(try dockerHelper("store", "{\"ServerURL\":\"\(bare)\",\"Username\":\"erin\",\"Secret\":\"two\"}").status, 0)
        let list = try dockerHelper("list")
        XCTAssertEqual(list.status, 0)
        let listed = harness.jsonObject(list.stdout)
        XCTAssertEqual(listed["https://\(registry):5000/v2/"] as? String, "carol")
        XCTAssertEqual(listed["https://\(bare)"] as? String, "erin")

        // erase, then docker's not-found message on standard output with exit 1.
        XCTAssertEqual(try dockerHelper("erase", url).status, 0)
        let gone = try dockerHelper("get", url)
        XCTAssertEqual(gone.status, 1)
        XCTAssertEqual(gone.stdout, "credentials not found in native keychain\n")
        XCTAssertEqual(try dockerHelper("erase", url).stdout, "credentials not found in native keychain\n")
        XCTAssertEqual(try harness.run(["find-internet-password", "-s", registry]).status, 44)

        // Port 0 is the keychain's "no port" (found by FuzzCredentialInput): the same server.
        XCTAssertEqual(try dockerHelper("store", "{\"ServerURL\":\"https://\(bare):0/p\",\"Username\":\"z\",\"Secret\":\"zero\"}").status, 0)
        XCTAssertTrue(try dockerHelper("get", "https://\(bare)/p").stdout.contains("\"Secret\":\"zero\""))
        XCTAssertEqual(harness.jsonObject(try dockerHelper("list").stdout)["https://\(bare)/p"] as? String, "z")

        // docker's other messages, and version.
        XCTAssertEqual(try dockerHelper("get", "  \n").stdout, "no credentials server URL\n")
        XCTAssertEqual(try dockerHelper("store", "{\"ServerURL\":\"x.example\",\"Secret\":\"s\"}").stdout, "no credentials username\n")
        XCTAssertEqual(try dockerHelper("get", "ftp://x.example").stdout, "unsupported scheme: ftp\n")
        let malformed = try dockerHelper("store", "{\"ServerURL\":\"x.example\",\"Username\":\"u\",\"Secret\":\"never shown")
        XCTAssertEqual(malformed.status, 1)
        XCTAssertTrue(malformed.stdout.hasPrefix("invalid JSON: ") && !malformed.stdout.contains("never shown"), malformed.stdout)
        XCTAssertTrue(try dockerHelper("version").stdout.hasPrefix("docker-credential-keychainfs (keychainfs) "))
    }

    func testDockerEraseLeavesGitsCredentialForTheSameHost() throws {
        let host = unique("shared") + ".example.com"
        XCTAssertEqual(try gitHelper("store", "protocol=https\nhost=\(host)\nusername=git-user\npassword=git-pw\n").status, 0)
        XCTAssertEqual(try dockerHelper("store", "{\"ServerURL\":\"\(host)\",\"Username\":\"docker-user\",\"Secret\":\"docker-pw\"}").status, 0)
        XCTAssertTrue(try dockerHelper("get", host).stdout.contains("\"Secret\":\"docker-pw\""))
        XCTAssertEqual(try dockerHelper("erase", host).status, 0)
        XCTAssertEqual(try gitHelper("get", "protocol=https\nhost=\(host)\n").stdout, "password=git-pw\nusername=git-user\n")
    }

    /// The seeds of FuzzCredentialInput through the real helpers: each is read as git's lines
    /// and as docker's JSON and URL; every run ends with status 0 or 1, never a signal.
    func testTheFuzzCorpusEndsInAnAnswerOrAMessage() throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/FuzzCredentialInput").path
        let names = try FileManager.default.contentsOfDirectory(atPath: corpus).sorted()
        XCTAssertFalse(names.isEmpty)
        for name in names {
            let input = try String(decoding: Data(contentsOf: URL(fileURLWithPath: corpus + "/" + name)), as: UTF8.self)
            for (helper, action) in [(CredentialHelpers.git, "get"), (CredentialHelpers.git, "store"),
                                     (CredentialHelpers.docker, "get"), (CredentialHelpers.docker, "store")] {
                let r = try run([helper, action], input: input)
                XCTAssertTrue(r.status == 0 || r.status == 1, "\(name) through \(helper) \(action): \(r)")
            }
        }
    }

    // MARK: Secret Service clients

    static let dockerSecretService = "/usr/local/libexec/keychainfs-tests/docker-credential-secretservice"

    func startSecretService() throws -> SessionBus {
        for tool in ["/usr/bin/dbus-daemon", "/usr/bin/dbus-send"] where access(tool, X_OK) != 0 {
            throw XCTSkip("\(tool) is not installed (scripts/setup.sh installs it)")
        }
        let bus = try SessionBus(harness: harness)
        self.bus = bus
        try bus.startProvider()
        return bus
    }

    func testDebiansDockerSecretServiceHelperStoresIntoKeychainfs() throws {
        guard access(Self.dockerSecretService, X_OK) == 0 else {
            throw XCTSkip("\(Self.dockerSecretService) is missing (scripts/setup.sh unpacks it)")
        }
        let bus = try startSecretService()
        let url = "https://" + unique("ss") + ".example.com"
        let user = unique("ssuser")
        let json = "{\"ServerURL\":\"\(url)\",\"Username\":\"\(user)\",\"Secret\":\"over dbus\"}"
        let store = bus.run([Self.dockerSecretService, "store"], input: json)
        XCTAssertEqual(store.status, 0, "\(store)")
        let get = bus.run([Self.dockerSecretService, "get"], input: url)
        XCTAssertEqual(get.status, 0, "\(get)")
        let back = harness.jsonObject(get.stdout)
        XCTAssertEqual(back["ServerURL"] as? String, url)
        XCTAssertEqual(back["Username"] as? String, user)
        XCTAssertEqual(back["Secret"] as? String, "over dbus")
        XCTAssertEqual(harness.jsonObject(bus.run([Self.dockerSecretService, "list"]).stdout)[url] as? String, user)

        // In the vault: a generic password whose account is the helper's `username` attribute.
        XCTAssertEqual(try harness.run(["find-generic-password", "-a", user, "-w"]).stdout, "over dbus\n")

        // The same JSON through docker-credential-keychainfs (internet passwords) reads back the same.
        XCTAssertEqual(try dockerHelper("store", json).status, 0)
        XCTAssertEqual(harness.jsonObject(try dockerHelper("get", url).stdout) as NSDictionary, back as NSDictionary)

        XCTAssertEqual(bus.run([Self.dockerSecretService, "erase"], input: url).status, 0)
        let gone = bus.run([Self.dockerSecretService, "get"], input: url)
        XCTAssertNotEqual(gone.status, 0)
        XCTAssertTrue(gone.stdout.contains("credentials not found in native keychain"), "\(gone)")
        XCTAssertEqual(try harness.run(["find-generic-password", "-a", user]).status, 44)
    }

    func testGitsOwnLibsecretHelperStoresIntoKeychainfs() throws {
        let source = "/usr/share/doc/git/contrib/credential/libsecret/git-credential-libsecret.c"
        guard access(source, R_OK) == 0, access("/usr/bin/gcc", X_OK) == 0,
              (try? run(["/usr/bin/pkg-config", "--exists", "libsecret-1", "glib-2.0"]))?.status == 0 else {
            throw XCTSkip("git's libsecret helper source, gcc or libsecret-1-dev is missing (scripts/setup.sh)")
        }
        // Built from the source Debian's git ships, as its Makefile builds it.
        let helper = harness.dir + "/git-credential-libsecret"
        let flags = try run(["/usr/bin/pkg-config", "--cflags", "--libs", "libsecret-1", "glib-2.0"]).stdout
            .split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        let build = try run(["/usr/bin/gcc", "-O2", "-o", helper, source] + flags)
        XCTAssertEqual(build.status, 0, "\(build)")
        let bus = try startSecretService()

        let host = unique("lib") + ".example.com"
        let store = bus.run([helper, "store"], input: "protocol=https\nhost=\(host)\nusername=frank\npassword=libsecret pw\n\n")
        XCTAssertEqual(store.status, 0, "\(store)")
        let get = bus.run([helper, "get"], input: "protocol=https\nhost=\(host)\n\n")
        XCTAssertEqual(get.status, 0, "\(get)")
        XCTAssertTrue(get.stdout.contains("password=libsecret pw\n"), "\(get)")
        XCTAssertTrue(get.stdout.contains("username=frank\n"), "\(get)")
        // In the vault under the label git's helper gives it.
        XCTAssertEqual(try harness.run(["find-generic-password", "-l", "Git: https://\(host)/", "-w"]).stdout, "libsecret pw\n")

        XCTAssertEqual(bus.run([helper, "erase"], input: "protocol=https\nhost=\(host)\nusername=frank\n\n").status, 0)
        XCTAssertEqual(bus.run([helper, "get"], input: "protocol=https\nhost=\(host)\n\n").stdout, "")
        XCTAssertEqual(try harness.run(["find-generic-password", "-l", "Git: https://\(host)/"]).status, 44)
    }
}
