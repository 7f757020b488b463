import Foundation
import KeychainSSHAgent
import XCTest

/// ADD_IDENTITY and ADD_ID_CONSTRAINED as ssh-add writes them (draft-miller-ssh-agent 4.2): the
/// private fields come back as ranges of the message, the public half as the key it lists as.
final class AddedIdentityTests: XCTestCase {
    func string(_ bytes: [UInt8]) -> [UInt8] {
        var writer = SSHWireWriter()
        writer.writeString(bytes)
        return writer.bytes
    }

    func testAnECDSAKeyGivesItsScalarAsARangeWithoutTheSignByte() throws {
        let scalar: [UInt8] = [0x80] + [UInt8](repeating: 7, count: 31)  // top bit set: the mpint has a 00 first
        let body = string(Array("ecdsa-sha2-nistp256".utf8)) + string(Array("nistp256".utf8)) + string(ECDSABlobTests.p256G)
            + string([0] + scalar) + string(Array("work laptop".utf8))
        let added = try AddedIdentity.decode(body, constrained: false)
        guard case .ecdsa(let curve, let point, let range) = added.key else { return XCTFail("\(added.key)") }
        XCTAssertEqual(curve, .p256)
        XCTAssertEqual(point, ECDSABlobTests.p256G)
        XCTAssertEqual(Array(body[range]), scalar)
        XCTAssertEqual(added.comment, "work laptop")
        XCTAssertEqual(added.publicKey, .ecdsa(try SSHPublicKeyBlob(uncompressedPoint: ECDSABlobTests.p256G)))
        XCTAssertNil(added.lifetime)
        XCTAssertFalse(added.confirm)
        XCTAssertThrowsError(try AddedIdentity.decode(body + [1], constrained: false), "bytes after the comment")
    }

    func testConstraintsAreLifetimeConfirmAndExtensions() throws {
        let a = [UInt8](repeating: 0xA5, count: 32)
        let body = string(Array("ssh-ed25519".utf8)) + string(a) + string([UInt8](repeating: 1, count: 32) + a) + string([])
        var lifetime = SSHWireWriter()
        lifetime.writeByte(1)
        lifetime.writeUInt32(600)
        let added = try AddedIdentity.decode(body + lifetime.bytes + [2], constrained: true)
        XCTAssertEqual(added.lifetime, 600)
        XCTAssertTrue(added.confirm)
        XCTAssertEqual(added.publicKey, .ed25519(a))
        guard case .ed25519(_, let secret) = added.key else { return XCTFail() }
        XCTAssertEqual(Array(body[secret.prefix(32)]), [UInt8](repeating: 1, count: 32), "the seed comes first")

        let unknown = try AddedIdentity.decode(body + [255] + string(Array("sk-provider@openssh.com".utf8)) + [9, 9], constrained: true)
        XCTAssertEqual(unknown.extensions, ["sk-provider@openssh.com"], "named, so the agent can refuse it")
        XCTAssertThrowsError(try AddedIdentity.decode(body + [255] + string(Array("restrict-destination-v00@openssh.com".utf8)) + string([9]),
                                                      constrained: true), "destinations that do not decode")
        XCTAssertThrowsError(try AddedIdentity.decode(body + [7], constrained: true), "an unknown constraint")
        XCTAssertThrowsError(try AddedIdentity.decode(body + [1, 0, 0], constrained: true), "a lifetime cut short")
        XCTAssertThrowsError(try AddedIdentity.decode(body + [2], constrained: false), "constraints in an unconstrained add")
    }

    func testAnEd25519KeyWhosePublicHalvesDisagreeIsRefused() {
        let body = string(Array("ssh-ed25519".utf8)) + string([UInt8](repeating: 1, count: 32))
            + string([UInt8](repeating: 2, count: 64)) + string([])
        XCTAssertThrowsError(try AddedIdentity.decode(body, constrained: false))
        let dsa = string(Array("ssh-dss".utf8)) + string([1])
        XCTAssertThrowsError(try AddedIdentity.decode(dsa, constrained: false)) {
            XCTAssertEqual($0 as? SSHAgentCodecError, .unsupportedKeyType("ssh-dss"))
        }
    }

    /// The seed corpus' valid frames decode, so the fuzzer starts from messages that reach the
    /// decoders' depths (Fuzz/Corpus/generate.py writes them).
    func testTheFuzzersValidSeedsDecode() throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/FuzzAgentMessages")
        let names = try FileManager.default.contentsOfDirectory(atPath: corpus.path).filter { $0.hasPrefix("valid-") }
        XCTAssertGreaterThanOrEqual(names.count, 5)
        for name in names {
            var frames = AgentFrameBuffer()
            frames.append(Array(try Data(contentsOf: corpus.appendingPathComponent(name))))
            guard case .frame(let frame) = frames.next() else { XCTFail(name); continue }
            XCTAssertNoThrow(try AgentRequest.decode(frame), name)
            if frame.first == 17 || frame.first == 25 {
                XCTAssertNoThrow(try AddedIdentity.decode(frame.dropFirst(), constrained: frame.first == 25), name)
            }
        }
    }
}
