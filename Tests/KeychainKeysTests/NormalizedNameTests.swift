import KeychainKeys
import XCTest

/// Apple's normalized Name (`issr`, `subj`) on names written byte by byte: PrintableString
/// values upper-cased with blanks folded and trimmed, every other value and the structure kept,
/// lengths encoded again where a value shrank, malformed names refused.
final class NormalizedNameTests: XCTestCase {
    func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        if content.count < 0x80 { return [tag, UInt8(content.count)] + content }
        return [tag, 0x81, UInt8(content.count)] + content
    }
    let cn: [UInt8] = [0x06, 0x03, 0x55, 0x04, 0x03], o: [UInt8] = [0x06, 0x03, 0x55, 0x04, 0x0a]
    func atv(_ type: [UInt8], _ tag: UInt8, _ value: String) -> [UInt8] { tlv(0x30, type + tlv(tag, Array(value.utf8))) }

    func testPrintableStringsAreUpperCasedAndTheirBlanksFolded() {
        let name = tlv(0x30, tlv(0x31, atv(cn, 0x13, " \t a  b\t\tc-d.e \t")) + tlv(0x31, atv(o, 0x0c, "  utf8  Stays ")))
        let expected = tlv(0x31, atv(cn, 0x13, "A B C-D.E")) + tlv(0x31, atv(o, 0x0c, "  utf8  Stays "))
        XCTAssertEqual(NormalizedName.content(ofName: name), expected)
        XCTAssertEqual(NormalizedName.sequence(ofName: name), tlv(0x30, expected))
    }

    func testANameAlreadyNormalIsItsContent() {
        let content = tlv(0x31, atv(cn, 0x13, "HOST")) + tlv(0x31, atv(o, 0x16, "mail@example.com"))
        XCTAssertEqual(NormalizedName.content(ofName: tlv(0x30, content)), content)
        XCTAssertEqual(NormalizedName.content(ofName: [0x30, 0x00]), [], "the empty name")
        XCTAssertEqual(NormalizedName.content(ofName: tlv(0x30, content) + [0xff, 0xff]), content, "bytes after it are not read")
    }

    func testAMultiValuedRDNKeepsItsOrderAndOnlyItsChangedValueMoves() {
        // Not sorted as DER's SET OF would be: Apple keeps the written order, and so does this.
        let rdn = tlv(0x31, atv(o, 0x13, "zz  top") + atv(cn, 0x13, "ALREADY"))
        XCTAssertEqual(NormalizedName.content(ofName: tlv(0x30, rdn)), tlv(0x31, atv(o, 0x13, "ZZ TOP") + atv(cn, 0x13, "ALREADY")))
    }

    func testLengthsAreEncodedAgainWhenAValueShrinksPastOneByte() {
        // 130 bytes with folded runs shrink under 128: every enclosing length loses its 0x81.
        let long = String(repeating: "a  ", count: 43) + "a"
        XCTAssertEqual(long.utf8.count, 130)
        let name = tlv(0x30, tlv(0x31, atv(cn, 0x13, long)))
        XCTAssertEqual(name[1], 0x81)
        let folded = String(repeating: "A ", count: 43) + "A"
        XCTAssertEqual(NormalizedName.content(ofName: name), tlv(0x31, atv(cn, 0x13, folded)))
        XCTAssertEqual(NormalizedName.content(ofName: name)?[1], UInt8(tlv(0x30, cn + tlv(0x13, Array(folded.utf8))).count))
    }

    func testMalformedNamesHaveNoNormalizedForm() {
        let good = atv(cn, 0x13, "x")
        for (bad, why) in [
            (tlv(0x31, good), "not a SEQUENCE"),
            (tlv(0x30, tlv(0x30, good)), "an RDN that is not a SET"),
            (tlv(0x30, [0x31, 0x00]), "an empty RDN"),
            (tlv(0x30, tlv(0x31, tlv(0x31, cn + tlv(0x13, [0x78])))), "an attribute that is not a SEQUENCE"),
            (tlv(0x30, tlv(0x31, tlv(0x30, cn))), "a type without a value"),
            (tlv(0x30, tlv(0x31, tlv(0x30, cn + tlv(0x13, [0x78]) + tlv(0x13, [0x79])))), "two values"),
            (tlv(0x30, tlv(0x31, tlv(0x30, tlv(0x04, [1]) + tlv(0x13, [0x78])))), "a type that is not an OID"),
            ([0x30, 0x05, 0x31, 0x03], "a length past the end"),
            ([0x30, 0x80, 0x00, 0x00], "an indefinite length"),
            ([0x30, 0x85, 0, 0, 0, 0, 0], "a five-byte length"),
            ([], "nothing"),
        ] as [([UInt8], String)] {
            XCTAssertNil(NormalizedName.content(ofName: bad), why)
        }
    }
}
