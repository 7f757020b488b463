import KeychainSSHAgent
import XCTest

/// RFC 4251 fields: byte vectors from the RFC's own mpint examples, and every read checked
/// against the bytes left.
final class WireTests: XCTestCase {
    func testMPIntsAreTheRFCsExamples() {
        // RFC 4251 section 5: 0 -> 00 00 00 00; 0x9a378f9b2e332a7 -> 00 00 00 08 09 a3 78 f9 b2 e3 32 a7;
        // 0x80 -> 00 00 00 02 00 80.
        var writer = SSHWireWriter()
        writer.writePositiveMPInt([])
        writer.writePositiveMPInt([0x09, 0xa3, 0x78, 0xf9, 0xb2, 0xe3, 0x32, 0xa7])
        writer.writePositiveMPInt([0x00, 0x80])
        XCTAssertEqual(writer.bytes, [0, 0, 0, 0,
                                      0, 0, 0, 8, 0x09, 0xa3, 0x78, 0xf9, 0xb2, 0xe3, 0x32, 0xa7,
                                      0, 0, 0, 2, 0x00, 0x80])
        var reader = SSHWireReader(writer.bytes)
        XCTAssertEqual(try reader.readPositiveMPInt(), [])
        XCTAssertEqual(try reader.readPositiveMPInt(), [0x09, 0xa3, 0x78, 0xf9, 0xb2, 0xe3, 0x32, 0xa7])
        XCTAssertEqual(try reader.readPositiveMPInt(), [0x80])
        XCTAssertNoThrow(try reader.expectEnd())
    }

    func testNegativeAndNonMinimalMPIntsAreRefused() {
        var negative = SSHWireReader([0, 0, 0, 1, 0x80])
        XCTAssertThrowsError(try negative.readPositiveMPInt()) { XCTAssertEqual($0 as? SSHAgentCodecError, .malformed("negative mpint")) }
        var padded = SSHWireReader([0, 0, 0, 2, 0x00, 0x7f])
        XCTAssertThrowsError(try padded.readPositiveMPInt())
    }

    func testAStringLongerThanWhatIsLeftIsTruncatedNotACrash() {
        var reader = SSHWireReader([0xff, 0xff, 0xff, 0xff, 1, 2])
        XCTAssertThrowsError(try reader.readString()) { XCTAssertEqual($0 as? SSHAgentCodecError, .truncated) }
        var short = SSHWireReader([0, 0, 1])
        XCTAssertThrowsError(try short.readUInt32()) { XCTAssertEqual($0 as? SSHAgentCodecError, .truncated) }
        var empty = SSHWireReader([])
        XCTAssertThrowsError(try empty.readByte())
    }

    func testTextMustBeUTF8() {
        var reader = SSHWireReader([0, 0, 0, 2, 0xc3, 0x28])
        XCTAssertThrowsError(try reader.readText())
    }
}
