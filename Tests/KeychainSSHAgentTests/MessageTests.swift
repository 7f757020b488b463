import KeychainSSHAgent
import XCTest

/// Requests decoded from the bytes ssh-add and ssh send, replies encoded to the bytes they read.
final class MessageTests: XCTestCase {
    func testRequestIdentitiesIsOneByte() throws {
        XCTAssertEqual(try AgentRequest.decode([11]), .requestIdentities)
        XCTAssertThrowsError(try AgentRequest.decode([11, 0])) { XCTAssertEqual($0 as? SSHAgentCodecError, .trailingBytes) }
        XCTAssertThrowsError(try AgentRequest.decode([])) { XCTAssertEqual($0 as? SSHAgentCodecError, .truncated) }
    }

    func testASignRequestCarriesItsBlobDataAndFlags() throws {
        let frame: [UInt8] = [13, 0, 0, 0, 3, 0xaa, 0xbb, 0xcc, 0, 0, 0, 2, 0x01, 0x02, 0, 0, 0, 4]
        XCTAssertEqual(try AgentRequest.decode(frame),
                       .sign(keyBlob: [0xaa, 0xbb, 0xcc], data: [1, 2], flags: .rsaSHA2_512))
        // Every truncation of it is an error, none a crash.
        for length in 1..<frame.count {
            XCTAssertThrowsError(try AgentRequest.decode(Array(frame[0..<length])), "prefix of \(length) bytes")
        }
    }

    func testTheMessagesThisAgentDoesNotServeStillDecode() throws {
        XCTAssertEqual(try AgentRequest.decode([19]), .removeAllIdentities)
        XCTAssertEqual(try AgentRequest.decode([18, 0, 0, 0, 1, 7]), .removeIdentity(keyBlob: [7]))
        XCTAssertEqual(try AgentRequest.decode([22, 0, 0, 0, 2, 0x70, 0x77]), .lock)
        XCTAssertEqual(try AgentRequest.decode([23, 0, 0, 0, 0]), .unlock)
        XCTAssertEqual(try AgentRequest.decode([17, 0, 0, 0, 11] + Array("ssh-ed25519".utf8) + [0, 0]), .addIdentity(constrained: false))
        XCTAssertEqual(try AgentRequest.decode([27, 0, 0, 0, 5] + Array("query".utf8)), .extension(name: "query"))
        XCTAssertEqual(try AgentRequest.decode([20]), .smartcard(.addSmartcardKey))
        XCTAssertEqual(try AgentRequest.decode([200]), .unknown(200))
        XCTAssertEqual(try AgentRequest.decode([12, 0, 0, 0, 0]), .unknown(12), "a reply sent to the agent is not a request")
    }

    func testRepliesAreTheirMessageNumberAndFields() {
        XCTAssertEqual(AgentResponse.failure.framed(), [0, 0, 0, 1, 5])
        XCTAssertEqual(AgentResponse.success.framed(), [0, 0, 0, 1, 6])
        XCTAssertEqual(AgentResponse.identities([AgentIdentity(keyBlob: [1, 2], comment: "ab")]).encoded(),
                       [12, 0, 0, 0, 1, 0, 0, 0, 2, 1, 2, 0, 0, 0, 2, 0x61, 0x62])
        XCTAssertEqual(AgentResponse.identities([]).encoded(), [12, 0, 0, 0, 0])
        XCTAssertEqual(AgentResponse.signature([9]).encoded(), [14, 0, 0, 0, 1, 9])
    }
}
