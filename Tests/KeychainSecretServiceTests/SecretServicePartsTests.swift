import Foundation
import KeychainCore
import KeychainCrypto
import KeychainKeys
@testable import KeychainSecretService
import XCTest

/// The object paths the service serves (docs/secret-service.md): every path it makes parses back
/// to what made it, and nothing else parses.
final class ObjectPathTests: XCTestCase {
    func testEveryPathRoundTrips() {
        let ref = Array("genp".utf8) + (0..<16).map { UInt8($0) }
        let paths: [(ObjectPath, String)] = [
            (.service, "/org/freedesktop/secrets"),
            (.defaultAlias, "/org/freedesktop/secrets/aliases/default"),
            (.session(7), "/org/freedesktop/secrets/session/s7"),
            (.prompt(12), "/org/freedesktop/secrets/prompt/p12"),
            (.collection(group: "default"), "/org/freedesktop/secrets/collection/default"),
            (.collection(group: ""), "/org/freedesktop/secrets/collection/_"),
            (.collection(group: "team-a.b_c"), "/org/freedesktop/secrets/collection/team_2da_2eb_5fc"),
            (.collection(group: "é"), "/org/freedesktop/secrets/collection/_c3_a9"),
            (.item(group: "team", ref: ref), "/org/freedesktop/secrets/collection/team/" + Hex.encode(ref)),
        ]
        for (path, text) in paths {
            XCTAssertEqual(path.string, text)
            XCTAssertEqual(ObjectPath(text), path, text)
        }
    }

    func testElementsUseOnlyWhatDBusAllows() {
        for group in ["a b", "x/y", "..", "日本", "_", "9lives", "tab\t"] {
            let element = ObjectPath.element(group)
            XCTAssertTrue(element.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a) || $0 == 0x5f },
                          "\(group): \(element)")
            XCTAssertEqual(ObjectPath.group(fromElement: Substring(element)), group)
        }
    }

    func testForeignAndMalformedPathsDoNotParse() {
        for text in ["/", "", "/org/freedesktop/secrets/",
                     "/org/freedesktop/secrets/collection/team/", "/org/freedesktop/secrets/collection/team/zz",
                     "/org/freedesktop/secrets/collection/team/0102/x", "/org/freedesktop/secrets/collection/_4",
                     "/org/freedesktop/secrets/collection/_ZZ", "/org/freedesktop/secrets/collection/_FF",
                     "/org/freedesktop/secrets/session/sx", "/org/freedesktop/secrets/session/7",
                     "/org/freedesktop/secrets/prompt/p", "/org/freedesktop/secrets/aliases/login", "/org/other/collection/team",
                     "/org/freedesktop/secrets/collection/", "/org/freedesktop/secrets/collection//0102"] {
            XCTAssertNil(ObjectPath(text), text)
        }
    }
}

/// Sessions: bounded per connection and per uid, and usable only by the connection that opened them.
final class SessionTableTests: XCTestCase {
    func testSessionsAreBoundedAndOwned() throws {
        var table = SessionTable()
        var mine: [SecretSession] = []
        for _ in 0..<SessionTable.perConnection { mine.append(try table.open(owner: ":1.5", uid: 1000, transport: PlainTransport())) }
        XCTAssertEqual(Set(mine.map(\.number)).count, SessionTable.perConnection, "numbers are not reused")
        XCTAssertEqual(mine[0].path, "/org/freedesktop/secrets/session/s\(mine[0].number)")
        XCTAssertThrowsError(try table.open(owner: ":1.5", uid: 1000, transport: PlainTransport())) {
            XCTAssertEqual(($0 as? BusError)?.name, "org.freedesktop.DBus.Error.LimitsExceeded")
        }
        // Another connection of the same user still opens one.
        let other = try table.open(owner: ":1.6", uid: 1000, transport: PlainTransport())
        XCTAssertIdentical(try table.session(at: other.path, for: ":1.6"), other)
        XCTAssertThrowsError(try table.session(at: other.path, for: ":1.5"), "another connection's session") {
            XCTAssertEqual(($0 as? BusError)?.name, "org.freedesktop.Secret.Error.NoSession")
        }
        XCTAssertThrowsError(try table.session(at: "/org/freedesktop/secrets/session/s99999", for: ":1.6"))
        XCTAssertThrowsError(try table.session(at: "/org/freedesktop/secrets/prompt/p\(other.number)", for: ":1.6"))

        table.close(mine[0].number)
        XCTAssertThrowsError(try table.session(at: mine[0].path, for: ":1.5"), "closed")
        XCTAssertNoThrow(try table.open(owner: ":1.5", uid: 1000, transport: PlainTransport()), "room again after a close")
        table.closeAll(of: ":1.5")
        XCTAssertThrowsError(try table.session(at: mine[1].path, for: ":1.5"), "the connection left the bus")
        XCTAssertNoThrow(try table.session(at: other.path, for: ":1.6"))
    }

    func testOneUserCannotHoldMoreThanItsShare() throws {
        var table = SessionTable()
        for c in 0..<(SessionTable.perUser / SessionTable.perConnection) {
            for _ in 0..<SessionTable.perConnection { _ = try table.open(owner: ":1.\(c)", uid: 1000, transport: PlainTransport()) }
        }
        XCTAssertThrowsError(try table.open(owner: ":2.0", uid: 1000, transport: PlainTransport())) {
            XCTAssertEqual(($0 as? BusError)?.name, "org.freedesktop.DBus.Error.LimitsExceeded")
        }
        XCTAssertNoThrow(try table.open(owner: ":2.0", uid: 1001, transport: PlainTransport()), "another user")
    }

    func testThePlainTransportPassesTheSecretAsItIs() throws {
        let secret = try PlainTransport().open(parameters: try SecureBytes(count: 0), value: try SecureBytes(copying: Array("s".utf8)))
        XCTAssertEqual(secret.withUnsafeBytes { Array($0) }, Array("s".utf8))
    }
}

/// How Secret Service items and generic passwords map onto each other.
final class SecretAttributesTests: XCTestCase {
    func testAnItemMadeElsewhereShowsServiceAndAccount() {
        let item: Attributes = [.service: "db", .account: .data(Array("app".utf8))]
        XCTAssertEqual(SecretAttributes.of(item), ["service": "db", "account": "app", "username": "app"])
        XCTAssertEqual(SecretAttributes.contentType(of: item), "text/plain")
    }

    func testAnItemMadeOverDBusKeepsItsPairsInGena() {
        let pairs = ["service": "mail", "username": "bob", "xdg:schema": "org.example.Password"]
        let blob = SecretAttributes.encode(pairs, contentType: "application/octet-stream")
        XCTAssertEqual(Array(blob.prefix(5)), Array("kcss".utf8) + [1])
        let item: Attributes = [.service: "mail", .account: "bob", .generic: .data(blob)]
        XCTAssertEqual(SecretAttributes.of(item), pairs)
        XCTAssertEqual(SecretAttributes.contentType(of: item), "application/octet-stream")
        XCTAssertTrue(SecretAttributes.matches(pairs, ["username": "bob"]))
        XCTAssertTrue(SecretAttributes.matches(pairs, [:]))
        XCTAssertFalse(SecretAttributes.matches(pairs, ["username": "bob", "service": "web"]))
        XCTAssertNil(SecretAttributes.decode(Array(blob.dropLast())), "a cut blob")
        XCTAssertNil(SecretAttributes.decode(Array("kcss".utf8) + [2] + blob.dropFirst(5)), "another version")
        // A gena that is not ours is the item's own data: the item reads as one made elsewhere.
        let foreign: Attributes = [.service: "mail", .account: "bob", .generic: .data([1, 2, 3])]
        XCTAssertEqual(SecretAttributes.of(foreign), ["service": "mail", "account": "bob", "username": "bob"])
    }

    func testTheAccountOfAnItemMadeOverDBus() throws {
        let named = try SecretAttributes.primaryKey(for: ["service": "s", "username": "u", "account": "a"])
        XCTAssertEqual([named.service, named.account], ["s", "u"], "username before account")
        let account = try SecretAttributes.primaryKey(for: ["account": "a"])
        XCTAssertEqual([account.service, account.account], ["", "a"])
        let generated = try SecretAttributes.primaryKey(for: ["service": "s", "other": "x"])
        XCTAssertEqual(generated.service, "s")
        XCTAssertTrue(generated.account.hasPrefix("ss-"), generated.account)
        XCTAssertEqual(generated.account.count, 3 + 16)
        XCTAssertNotEqual(try SecretAttributes.primaryKey(for: [:]).account, try SecretAttributes.primaryKey(for: [:]).account)
    }
}

/// The `dh-ietf1024-sha256-aes128-cbc-pkcs7` session against an independent implementation:
/// Python's integers for the Diffie-Hellman of RFC 2409's 1024-bit group, and the `cryptography`
/// package's HKDF-SHA256 and AES-128-CBC with PKCS#7, as the specification describes them.
final class DHSessionInteropTests: XCTestCase {
    static let peer = #"""
    import secrets, sys
    from cryptography.hazmat.primitives import hashes, padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    p = int("FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
            "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
            "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF", 16)
    x = secrets.randbelow(p - 3) + 2
    print(pow(2, x, p).to_bytes(128, "big").hex(), flush=True)
    theirs, iv, ct = sys.stdin.readline().split()
    shared = pow(int(theirs, 16), x, p).to_bytes(128, "big")
    key = HKDF(algorithm=hashes.SHA256(), length=16, salt=None, info=b"").derive(shared)
    d = Cipher(algorithms.AES(key), modes.CBC(bytes.fromhex(iv))).decryptor()
    u = padding.PKCS7(128).unpadder()
    print((u.update(d.update(bytes.fromhex(ct)) + d.finalize()) + u.finalize()).hex(), flush=True)
    iv = secrets.token_bytes(16)
    pad = padding.PKCS7(128).padder()
    e = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    print(iv.hex(), (e.update(pad.update(b"from python, 32 bytes or more!!") + pad.finalize()) + e.finalize()).hex(), flush=True)
    """#

    static let python = "/usr/bin/python3"

    func testASessionOpensWhatTheOtherSideSealsBothWays() throws {
        guard access(Self.python, X_OK) == 0, runs([Self.python, "-c", "import cryptography"]) else {
            throw XCTSkip("\(Self.python) with the cryptography package is not installed")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = ["-c", Self.peer]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        defer {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
        let lines = LineReader(output.fileHandleForReading)

        let theirPublic = try XCTUnwrap(Hex.decode(try XCTUnwrap(lines.next())))
        XCTAssertEqual(theirPublic.count, 128)
        let session = try DHAES128Session(peerPublic: theirPublic)
        XCTAssertEqual(session.publicKey.count, 128, "128 big-endian bytes")
        let secret = Array("from swift".utf8)
        let (iv, ciphertext) = try secret.withUnsafeBytes { try session.seal($0) }
        input.fileHandleForWriting.write(Data("\(Hex.encode(session.publicKey)) \(Hex.encode(iv)) \(Hex.encode(ciphertext))\n".utf8))

        XCTAssertEqual(try XCTUnwrap(lines.next()), Hex.encode(secret), "the peer opened what this side sealed")
        let reply = try XCTUnwrap(lines.next()).split(separator: " ").map { try XCTUnwrap(Hex.decode($0)) }
        XCTAssertEqual(reply.count, 2)
        let transport = DHAESTransport(session)
        let opened = try transport.open(parameters: try SecureBytes(copying: reply[0]), value: try SecureBytes(copying: reply[1]))
        XCTAssertEqual(opened.withUnsafeBytes { Array($0) }, Array("from python, 32 bytes or more!!".utf8))

        // A wrong IV or a cut ciphertext is the caller's error, named as the specification's.
        for (parameters, value) in [(Array(reply[0].dropLast()), reply[1]), (reply[0], Array(reply[1].dropLast())),
                                    (reply[0], [])] {
            XCTAssertThrowsError(try transport.open(parameters: try SecureBytes(copying: parameters), value: try SecureBytes(copying: value))) {
                XCTAssertEqual(($0 as? BusError)?.name, "org.freedesktop.DBus.Error.InvalidArgs")
                XCTAssertEqual(($0 as? BusError)?.message, "the secret does not decrypt in this session")
            }
        }
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
    }

    func testPeerValuesThatForceTheSharedValueAreRefused() {
        let p = Hex.decode("FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
                           + "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
                           + "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF")!
        var pMinus1 = p
        pMinus1[127] -= 1
        for bad in [[0], [1], pMinus1, p] as [[UInt8]] {
            XCTAssertThrowsError(try DHAES128Session(peerPublic: bad), "\(bad.count) bytes")
        }
        XCTAssertNoThrow(try DHAES128Session(peerPublic: [2]))
    }

    func runs(_ argv: [String]) -> Bool {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: argv[0])
        p.arguments = Array(argv.dropFirst())
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }
}

/// Lines from a pipe, read as they arrive.
final class LineReader {
    let handle: FileHandle
    var buffer = Data()
    init(_ handle: FileHandle) { self.handle = handle }

    /// The next line without its newline; nil at the end of the stream.
    func next() -> String? {
        while true {
            if let nl = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...nl)
                return line
            }
            let more = handle.availableData
            if more.isEmpty { return nil }
            buffer.append(more)
        }
    }
}

/// The session bus's address, by sd_bus_open_user's rule (the provider opens its bus itself, to
/// refuse descriptors before it connects).
final class SessionBusAddressTests: XCTestCase {
    private var saved: [String: String?] = [:]

    override func setUp() {
        for name in ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"] {
            saved[name] = getenv(name).map { String(cString: $0) }
        }
    }

    override func tearDown() {
        for (name, value) in saved {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
    }

    func testTheSessionAddressWinsThenTheRuntimeDirectoryEscaped() {
        setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/tmp/b u s,guid=00", 1)
        setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1)
        XCTAssertEqual(BusConnection.sessionBusAddress(), "unix:path=/tmp/b u s,guid=00")
        unsetenv("DBUS_SESSION_BUS_ADDRESS")
        XCTAssertEqual(BusConnection.sessionBusAddress(), "unix:path=/run/user/1000/bus")
        setenv("XDG_RUNTIME_DIR", "/tmp/a b,c;d=é_-.", 1)
        XCTAssertEqual(BusConnection.sessionBusAddress(), "unix:path=/tmp/a%20b%2cc%3bd%3d%c3%a9_-./bus")
        unsetenv("XDG_RUNTIME_DIR")
        XCTAssertNil(BusConnection.sessionBusAddress())
    }
}
