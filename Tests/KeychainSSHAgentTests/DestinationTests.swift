import KeychainSSHAgent
import XCTest

/// `ssh-add -h`'s constraint, `session-bind@openssh.com` and the user-auth request a restricted
/// key may sign, decoded from the bytes OpenSSH sends.
final class DestinationTests: XCTestCase {
    let hostA: [UInt8] = Array("host-key-a".utf8), hostB: [UInt8] = Array("host-key-b".utf8)

    private func hop(user: String = "", host: String = "", keys: [([UInt8], Bool)] = []) -> [UInt8] {
        var w = SSHWireWriter()
        w.writeText(user)
        w.writeText(host)
        w.writeString([])
        for (blob, ca) in keys {
            w.writeString(blob)
            w.writeByte(ca ? 1 : 0)
        }
        return w.bytes
    }

    private func constraint(from: [UInt8], to: [UInt8], reserved: [UInt8] = []) -> [UInt8] {
        var inner = SSHWireWriter()
        inner.writeString(from)
        inner.writeString(to)
        inner.writeString(reserved)
        var outer = SSHWireWriter()
        outer.writeString(inner.bytes)
        return outer.bytes
    }

    func testAFirstHopConstraintPermitsOnlyItsHostAndUser() throws {
        let r = try DestinationRestriction(encoded: constraint(from: hop(), to: hop(user: "deploy*", host: "a", keys: [(hostA, false)])))
        XCTAssertEqual(r.constraints.count, 1)
        XCTAssertEqual(r.constraints[0].to.hostname, "a")
        XCTAssertTrue(r.permits(from: nil, to: hostA, user: "deploy-1"))
        XCTAssertTrue(r.permits(from: nil, to: hostA, user: nil), "listing checks no user")
        XCTAssertFalse(r.permits(from: nil, to: hostA, user: "root"))
        XCTAssertFalse(r.permits(from: nil, to: hostB, user: "deploy"))
        XCTAssertFalse(r.permits(from: hostB, to: hostA, user: "deploy"), "a first-hop constraint does not cover a forwarded hop")
    }

    func testAForwardedHopNeedsAConstraintFromTheHostBefore() throws {
        let encoded = constraint(from: hop(), to: hop(host: "a", keys: [(hostA, false)]))
            + constraint(from: hop(host: "a", keys: [(hostA, false)]), to: hop(host: "b", keys: [(hostB, false)]))
        let r = try DestinationRestriction(encoded: encoded)
        XCTAssertTrue(r.permits(from: hostA, to: hostB, user: "u"))
        XCTAssertFalse(r.permits(from: hostB, to: hostA, user: "u"))
        XCTAssertTrue(r.permits(from: hostA, to: nil, user: nil), "may be used beyond a")
        XCTAssertFalse(r.permits(from: hostB, to: nil, user: nil))
    }

    func testACertificateAuthorityEntryMatchesNoPlainKey() throws {
        let r = try DestinationRestriction(encoded: constraint(from: hop(), to: hop(host: "a", keys: [(hostA, true)])))
        XCTAssertFalse(r.permits(from: nil, to: hostA, user: nil))
    }

    func testConstraintsOpenSSHRefusesAreRefused() {
        let cases: [(String, [UInt8])] = [
            ("a from user", constraint(from: hop(user: "u", host: "x", keys: [(hostA, false)]), to: hop(host: "a", keys: [(hostA, false)]))),
            ("a from host without keys", constraint(from: hop(host: "x"), to: hop(host: "a", keys: [(hostA, false)]))),
            ("a to without keys", constraint(from: hop(), to: hop(host: "a"))),
            ("a to without a host", constraint(from: hop(), to: hop(keys: [(hostA, false)]))),
            ("a reserved field", constraint(from: hop(), to: hop(host: "a", keys: [(hostA, false)]), reserved: [1])),
            ("none", []),
            ("a key flag of 2", constraint(from: hop(), to: hop(host: "a", keys: []) + [0, 0, 0, 1, 9, 2])),
        ]
        for (name, bytes) in cases {
            XCTAssertThrowsError(try DestinationRestriction(encoded: bytes), name)
        }
    }

    func testAnAddWithDestinationsAndALifetimeKeepsBoth() throws {
        var w = SSHWireWriter()
        w.writeText("ssh-ed25519")
        let pk = [UInt8](repeating: 3, count: 32)
        w.writeString(pk)
        w.writeString([UInt8](repeating: 1, count: 32) + pk)
        w.writeText("comment")
        w.writeByte(255)
        w.writeText("restrict-destination-v00@openssh.com")
        let encoded = constraint(from: hop(), to: hop(host: "a", keys: [(hostA, false)]))
        w.writeString(encoded)
        w.writeByte(1)
        w.writeUInt32(60)
        let added = try AddedIdentity.decode(w.bytes, constrained: true)
        XCTAssertEqual(added.destinations?.encoded, encoded)
        XCTAssertEqual(added.lifetime, 60, "read on past the known extension")
        XCTAssertEqual(added.extensions, [])
    }

    func testPatterns() {
        for (text, pattern, result) in [("deploy", "deploy", true), ("deploy-1", "deploy*", true), ("x", "*", true), ("ab", "a?", true),
                                        ("abc", "a?", false), ("root", "deploy*", false), ("", "*", true), ("a", "", false)] {
            XCTAssertEqual(DestinationRestriction.matches(text, pattern: pattern), result, "\(text) ~ \(pattern)")
        }
    }

    func testSessionBindDecodes() throws {
        var w = SSHWireWriter()
        w.writeByte(27)
        w.writeText("session-bind@openssh.com")
        w.writeString(hostA)
        w.writeString([1, 2, 3])
        w.writeString([4, 5])
        w.writeByte(1)
        XCTAssertEqual(try AgentRequest.decode(w.bytes),
                       .sessionBind(SessionBind(hostKey: hostA, sessionID: [1, 2, 3], signature: [4, 5], isForwarding: true)))
        XCTAssertThrowsError(try AgentRequest.decode(w.bytes + [0]), "trailing bytes")
        XCTAssertThrowsError(try AgentRequest.decode(Array(w.bytes.dropLast()) + [2]), "a flag of 2")
    }

    func testAUserAuthRequestIsParsedAndAnythingElseRefused() throws {
        func request(method: String, hostKey: [UInt8]?) -> [UInt8] {
            var w = SSHWireWriter()
            w.writeString([9, 9])
            w.writeByte(50)
            w.writeText("deploy")
            w.writeText("ssh-connection")
            w.writeText(method)
            w.writeByte(1)
            w.writeText("ssh-ed25519")
            w.writeString([7])
            if let hostKey { w.writeString(hostKey) }
            return w.bytes
        }
        let plain = try UserAuthRequest(parsing: request(method: "publickey", hostKey: nil))
        XCTAssertEqual(plain.user, "deploy")
        XCTAssertEqual(plain.sessionID, [9, 9])
        XCTAssertEqual(plain.keyBlob, [7])
        XCTAssertNil(plain.hostKey)
        XCTAssertEqual(try UserAuthRequest(parsing: request(method: "publickey-hostbound-v00@openssh.com", hostKey: hostB)).hostKey, hostB)
        XCTAssertThrowsError(try UserAuthRequest(parsing: request(method: "publickey", hostKey: hostB)), "trailing bytes")
        XCTAssertThrowsError(try UserAuthRequest(parsing: request(method: "password", hostKey: nil)))
        XCTAssertThrowsError(try UserAuthRequest(parsing: Array("SSHSIG".utf8) + [0, 0, 0, 1]))
    }
}
