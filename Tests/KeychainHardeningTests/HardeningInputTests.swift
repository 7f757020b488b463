import Foundation
import KeychainTestSupport
import XCTest

/// Issue 7: names and values at the edges through the CLI and the mount: empty, 255 and 4096
/// bytes, NUL, invalid UTF-8, `..`, `/`, and secrets of a few MiB. Exact round trips, or the
/// documented error.
final class HardeningInputTests: MountTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        signal(SIGPIPE, SIG_IGN)
    }

    /// The item's service and account as the CLI's JSON gives them (bytes), from dump-keychain.
    private func dumpedNames() throws -> [(service: [UInt8], account: [UInt8], secret: [UInt8]?)] {
        try h.dump().map { item in
            let a = item["attributes"] as? [String: Any] ?? [:]
            return (jsonBytes(a["svce"]) ?? [], jsonBytes(a["acct"]) ?? [], jsonBytes(item["password"]))
        }
    }

    // MARK: names through the CLI, seen through the mount

    func testEdgeNamesFromTheCLIRoundTripAndShowUnderTheirDocumentedNames() throws {
        let point = try mount()
        let long255 = String(repeating: "n", count: 255)
        let long256 = String(repeating: "n", count: 254) + "é"          // 256 bytes: hashed
        let long4096 = String(repeating: "x", count: 4095) + "!"
        // The empty account after others: a find that ignored `-a ""` would return another secret.
        let accounts = [".", "..", "", "a/b", "/", "%", "%2F", "100%", ".hidden", " lead and trail ", "-dash", "tab\there",
                        "new\nline", "ünïcödé ✓", long255, long256, long4096]
        let services = ["edge", ".ssh", "..", "a/b/c", "", String(repeating: "s", count: 255), String(repeating: "S", count: 300)]

        var expected: [(service: String, account: String, secret: String)] = []
        for (i, account) in accounts.enumerated() { expected.append(("edge", account, "acct-\(i)-" + Canary.make(12))) }
        for (i, service) in services.enumerated() where service != "edge" {
            expected.append((service, "svc-account", "svc-\(i)-" + Canary.make(12)))
        }
        for e in expected {
            let r = try h.run(["add-generic-password", "-s", e.service, "-a", e.account, "-w", "-"], input: e.secret)
            XCTAssertEqual(r.status, 0, "add \(e.service.prefix(20).debugDescription)/\(e.account.prefix(20).debugDescription): \(r)")
        }
        // The CLI finds each one exactly, and `security`-style duplicates are refused.
        for e in expected {
            let r = try h.run(["find-generic-password", "-s", e.service, "-a", e.account, "-w"])
            XCTAssertEqual(r.stdout, e.secret + "\n", "find \(e.service.prefix(20).debugDescription)/\(e.account.prefix(20).debugDescription): \(r.status) \(r.stderr)")
        }
        let dup = try h.run(["add-generic-password", "-s", "edge", "-a", "..", "-w", "x"])
        XCTAssertEqual(dup.status, 45, "duplicate: \(dup)")
        let dumped = try dumpedNames()
        XCTAssertEqual(dumped.count, expected.count)
        for e in expected {
            XCTAssertTrue(dumped.contains { $0.service == Array(e.service.utf8) && $0.account == Array(e.account.utf8) && $0.secret == Array(e.secret.utf8) },
                          "dump-keychain has \(e.service.prefix(20).debugDescription)/\(e.account.prefix(20).debugDescription) byte for byte")
        }

        // Through the mount: each item at its documented name, reading exactly its secret.
        var dirs: [String: [[UInt8]]] = [:]
        for e in expected {
            let svc = Array(e.service.utf8), acct = Array(e.account.utf8)
            let dirName = try documentedName(svc, service: true) ?? hashedName(svc, scratch: h.dir)
            let fileName = try documentedName(acct, service: false) ?? hashedName(acct, scratch: h.dir)
            let dirPath = point + "/" + String(decoding: dirName, as: UTF8.self)
            if dirs[dirPath] == nil { dirs[dirPath] = RawFS.list(dirPath) ?? [] }
            let what = "\(String(decoding: dirName.prefix(40), as: UTF8.self))/\(String(decoding: fileName.prefix(40), as: UTF8.self))"
            XCTAssertTrue(dirs[dirPath]!.contains(fileName), "\(what) is listed (listing: \(dirs[dirPath]!.map { String(decoding: $0.prefix(40), as: UTF8.self) }))")
            let path = RawFS.join(dirPath, fileName)
            let read = RawFS.read(path)
            XCTAssertEqual(read.bytes, Array(e.secret.utf8), "\(what) reads its secret (\(FS.name(read.errno)))")
            XCTAssertEqual(RawFS.stat(path).st.map { Int($0.st_size) }, e.secret.utf8.count, "\(what) st_size")
        }
        let top = RawFS.list(point) ?? []
        XCTAssertFalse(top.contains { $0.first == UInt8(ascii: ".") }, "no service shows as a dot-name at the top: \(top.map { String(decoding: $0, as: UTF8.self) })")
        XCTAssertTrue(top.allSatisfy { $0.count <= 255 && !$0.contains(0) && !$0.contains(UInt8(ascii: "/")) })

        // Writing through a hashed name updates that item.
        let hashed = try hashedName(Array(long4096.utf8), scratch: h.dir)
        let newSecret = "via-hashed-" + Canary.make(12)
        XCTAssertEqual(RawFS.write(RawFS.join(point + "/edge", hashed), Array(newSecret.utf8)), FS.ok)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "edge", "-a", long4096, "-w"]).stdout, newSecret + "\n")
    }

    // MARK: names made through the mount

    func testEdgeNamesMadeThroughTheMount() throws {
        let point = try mount()
        XCTAssertEqual(FS.check(mkdir(point + "/mnt", 0o755)), FS.ok)
        let invalidUTF8: [UInt8] = [0xFF, 0xFE, 0x41, 0xC3]                      // not UTF-8, as bytes
        let cases: [(name: [UInt8], account: [UInt8])] = [
            (Array("%".utf8), []),                                                   // the empty account
            (Array("%2E".utf8), Array(".".utf8)),
            (Array("%2E.".utf8), Array("..".utf8)),
            (Array("a%2Fb".utf8), Array("a/b".utf8)),
            (Array("x%00y".utf8), [0x78, 0, 0x79]),                                  // NUL in an account
            (Array("100%25".utf8), Array("100%".utf8)),
            (Array(".dot".utf8), Array(".dot".utf8)),                                // accounts may start with '.'
            (invalidUTF8, invalidUTF8),
            (Array(repeating: UInt8(ascii: "m"), count: 255), Array(repeating: UInt8(ascii: "m"), count: 255)),
        ]
        var secrets: [[UInt8]] = []
        for (i, c) in cases.enumerated() {
            var s = Array("m\(i)-".utf8) + Canary.bytes(40)
            if i == 0 { s = [] }                                                     // and an empty secret
            secrets.append(s)
            let e = RawFS.write(RawFS.join(point + "/mnt", c.name), s)
            XCTAssertEqual(e, FS.ok, "create \(String(decoding: c.name.prefix(30), as: UTF8.self).debugDescription): \(FS.name(e))")
        }
        let listing = RawFS.list(point + "/mnt") ?? []
        XCTAssertEqual(Set(listing), Set(cases.map(\.name)), "exactly the names written, in canonical form")
        for (i, c) in cases.enumerated() {
            XCTAssertEqual(RawFS.read(RawFS.join(point + "/mnt", c.name)).bytes, secrets[i], "read back \(hardeningHex(Array(c.name.prefix(16))))")
        }
        // The items hold the unescaped values, byte for byte.
        let dumped = try dumpedNames().filter { $0.service == Array("mnt".utf8) }
        for (i, c) in cases.enumerated() {
            XCTAssertTrue(dumped.contains { $0.account == c.account && ($0.secret ?? []) == secrets[i] },
                          "an item with account \(hardeningHex(Array(c.account.prefix(16)))) and its secret; dumped accounts: \(dumped.map { hardeningHex(Array($0.account.prefix(16))) })")
        }
        XCTAssertEqual(dumped.count, cases.count)
        // The CLI reaches the ones argv can carry.
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "mnt", "-a", "..", "-w"]).stdout,
                       String(decoding: secrets[2], as: UTF8.self) + "\n")

        // A service escaped at the top: mkdir %2Essh makes service ".ssh".
        XCTAssertEqual(RawFS.mkdir(Array((point + "/%2Essh").utf8)), FS.ok)
        XCTAssertEqual(FS.write(point + "/%2Essh/key", "dot-service"), FS.ok)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", ".ssh", "-a", "key", "-w"]).stdout, "dot-service\n")

        // Names not in canonical form do not exist and cannot be made (docs: EINVAL).
        let before = try dumpedNames().count
        for bad in ["%61", "%2f", "a%2fb", "%2", "%G0", "%%", "%2E%2E", ".ssh-not-escaped-is-fine-here", "%H00000000000000000000000000000000"] {
            let e = FS.write(point + "/mnt/" + bad, "x")
            if bad.hasPrefix(".ssh") { XCTAssertEqual(e, FS.ok); continue }
            XCTAssertNotEqual(e, FS.ok, "creating non-canonical \(bad) fails")
            if bad != "%H00000000000000000000000000000000" {
                XCTAssertEqual(e, EINVAL, "creating \(bad): \(FS.name(e)), documented EINVAL")
            }
            let st = FS.stat(point + "/mnt/" + bad).errno
            XCTAssertTrue(st == ENOENT || st == EINVAL, "\(bad) does not exist: \(FS.name(st))")
        }
        XCTAssertEqual(FS.check(mkdir(point + "/%2essh", 0o755)), EINVAL, "mkdir of a non-canonical service")
        XCTAssertEqual(FS.check(mkdir(point + "/.ssh", 0o755)) == FS.ok, false, "a top-level dot-name is reserved")
        XCTAssertEqual(try dumpedNames().count, before + 1, "only the one canonical name made an item")
    }

    // MARK: secrets

    func testEdgeSecretsRoundTripThroughCLIAndMount() throws {
        let point = try mount()
        let secrets: [(String, [UInt8])] = [
            ("empty", []),
            ("one-newline", [0x0A]),
            ("nul", Array("before\u{0}after".utf8)),
            ("only-nuls", [0, 0, 0]),
            ("binary", (0...255).map { UInt8($0) }),
            ("255", Canary.bytes(255)),
            ("4096", Canary.bytes(4096)),
            ("trailing-newlines", Array("two\n\n".utf8)),
            ("crlf", Array("line\r\n".utf8)),
        ]
        for (name, s) in secrets {
            // -w - drops one trailing newline: send exactly one more.
            let add = try h.runRaw(["add-generic-password", "-s", "sec", "-a", name, "-w", "-"], input: s + [0x0A])
            XCTAssertEqual(add.status, 0, "add \(name): \(String(decoding: add.err, as: UTF8.self))")
            let find = try h.runRaw(["find-generic-password", "-s", "sec", "-a", name, "-w"])
            XCTAssertEqual(find.status, 0)
            XCTAssertEqual(Array(find.out), s + [0x0A], "find -w \(name): the bytes and one newline")
            XCTAssertEqual(FS.read(point + "/sec/" + name).bytes, s, "mount read \(name)")
            XCTAssertEqual(FS.stat(point + "/sec/" + name).st.map { Int($0.st_size) }, s.count, "st_size \(name)")
            // And the other way: written through the mount, read by the CLI.
            XCTAssertEqual(FS.write(point + "/sec/m-" + name, s), FS.ok, "mount write \(name)")
            let back = try h.runRaw(["find-generic-password", "-s", "sec", "-a", "m-" + name, "-w"])
            XCTAssertEqual(Array(back.out), s + [0x0A], "mount write \(name), CLI read")
        }
        // -w "" and -w - with no input at all: the empty secret.
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "sec", "-a", "argv-empty", "-w", ""]).status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "sec", "-a", "argv-empty", "-w"]).stdout, "\n")
        XCTAssertEqual(try h.runRaw(["add-generic-password", "-s", "sec", "-a", "stdin-empty", "-w", "-"]).status, 0)
        XCTAssertEqual(FS.read(point + "/sec/stdin-empty").bytes, [])
        // -g shows binary secrets as hex.
        let g = try h.runRaw(["find-generic-password", "-s", "sec", "-a", "binary", "-g"])
        let shown = String(decoding: g.err, as: UTF8.self)
        XCTAssertTrue(shown.lowercased().hasPrefix("password: 0x" + hardeningHex((0...255).map { UInt8($0) })), "-g: \(shown.prefix(60))")
    }

    func testSecretsOfThreeMiBThroughCLIAndMount() throws {
        let point = try mount()
        let size = 3 << 20
        // Through the CLI, -w -, read back by the CLI and the mount.
        let viaCLI = Canary.bytes(size)
        let add = try h.runRaw(["add-generic-password", "-s", "big", "-a", "cli", "-w", "-"], input: viaCLI + [0x0A])
        XCTAssertEqual(add.status, 0, String(decoding: add.err, as: UTF8.self))
        let find = try h.runRaw(["find-generic-password", "-s", "big", "-a", "cli", "-w"])
        XCTAssertEqual(find.status, 0)
        XCTAssertTrue(Array(find.out) == viaCLI + [0x0A], "find -w of 3 MiB: \(find.out.count) bytes")
        XCTAssertEqual(FS.stat(point + "/big/cli").st.map { Int($0.st_size) }, size)
        XCTAssertTrue(FS.read(point + "/big/cli").bytes == viaCLI, "mount read of 3 MiB")

        // Through the mount in 128 KiB writes, read back by the mount and the CLI.
        let viaMount = Canary.bytes(size)
        XCTAssertEqual(FS.write(point + "/big/mount", viaMount), FS.ok)
        let fd = open(point + "/big/mount", O_RDONLY)
        XCTAssertGreaterThanOrEqual(fd, 0)
        if fd >= 0 {
            let r = FS.readAll(fd, chunk: 1 << 17)
            close(fd)
            XCTAssertTrue(r.bytes == viaMount, "mount read of a 3 MiB mount write: \(r.bytes?.count ?? -1) bytes, \(FS.name(r.errno))")
        }
        let back = try h.runRaw(["find-generic-password", "-s", "big", "-a", "mount", "-w"])
        XCTAssertTrue(Array(back.out) == viaMount + [0x0A], "CLI read of a 3 MiB mount write: \(back.out.count) bytes")
        // A read in the middle, at an odd offset.
        let fd2 = open(point + "/big/mount", O_RDONLY)
        if fd2 >= 0 {
            XCTAssertEqual(FS.pread(fd2, count: 1000, offset: 1_234_567).bytes.map(Array.init), Array(viaMount[1_234_567..<1_235_567]))
            XCTAssertEqual(FS.pread(fd2, count: 1000, offset: size - 10).bytes?.count, 10)
            XCTAssertEqual(FS.pread(fd2, count: 1000, offset: size + 10).bytes?.count, 0)
            close(fd2)
        }
        // Zero-extending truncate past the end and back.
        XCTAssertEqual(FS.check(truncate(point + "/big/mount", off_t(size + 5))), FS.ok)
        XCTAssertTrue(FS.read(point + "/big/mount").bytes == viaMount + [0, 0, 0, 0, 0])
    }
}
