import KeychainCore
@testable import KeychainTPM
import XCTest

/// The sealed device key file without a TPM: its layout (docs/tpm.md, "The sealed device key
/// file"), what a parse refuses, `--tpm-pcrs` lists, and how TPM return codes are named.
final class SealedKeyFileTests: XCTestCase {
    let primary = SealedKey.Object(publicArea: [0, 2, 0xaa, 0xbb], privateArea: [0, 1, 0xcc])
    let recovery = SealedKey.Object(publicArea: [0, 1, 0xdd], privateArea: [0, 2, 0xee, 0xff])

    func testTheFileIsMagicFormatMaskAndTwoCopies() throws {
        let key = SealedKey(pcrs: [0, 7, 23], primary: primary, recovery: recovery)
        let expected: [UInt8] = Array("KCFSTPM".utf8) + [0] + [0, 1] + [0x00, 0x80, 0x00, 0x81]
            + [0, 0, 0, 4, 0, 2, 0xaa, 0xbb] + [0, 0, 0, 3, 0, 1, 0xcc]
            + [0, 0, 0, 3, 0, 1, 0xdd] + [0, 0, 0, 4, 0, 2, 0xee, 0xff]
        XCTAssertEqual(key.encoded(), expected)
        let back = try SealedKey.parse(expected)
        XCTAssertEqual(back, key)
        XCTAssertEqual(back.pcrs, [0, 7, 23])
        XCTAssertTrue(back.hasRecoveryCopy)
        XCTAssertTrue(SealedKey.looksSealed(expected))
    }

    func testAKeyWithoutPCRsHasNoRecoveryCopy() throws {
        let key = SealedKey(pcrs: [], primary: primary, recovery: nil)
        let file = key.encoded()
        XCTAssertEqual(Array(file[10..<14]), [0, 0, 0, 0], "mask 0: no PCR policy")
        XCTAssertEqual(Array(file.suffix(8)), [0, 0, 0, 0, 0, 0, 0, 0], "an empty recovery copy")
        let back = try SealedKey.parse(file)
        XCTAssertEqual(back.pcrs, [])
        XCTAssertFalse(back.hasRecoveryCopy)
        XCTAssertEqual(back, key)
    }

    func testAPlainDeviceKeyDoesNotLookSealed() {
        XCTAssertFalse(SealedKey.looksSealed(Array(repeating: 0x4b, count: 32)))
        XCTAssertFalse(SealedKey.looksSealed(Array("KCFSTPM".utf8) + [0]), "the magic alone")
        XCTAssertFalse(SealedKey.looksSealed(Array("KCFSTPM".utf8) + [1, 0, 1]))
    }

    func malformed(_ bytes: [UInt8], _ why: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try SealedKey.parse(bytes), why, file: file, line: line) { error in
            guard case .malformed? = error as? SealedKey.ParseError else {
                return XCTFail("\(why): \(error)", file: file, line: line)
            }
            XCTAssertEqual("\(error)", "the sealed device key file is damaged", file: file, line: line)
        }
    }

    func testDamagedFilesAreRefusedByName() {
        let good = SealedKey(pcrs: [7], primary: primary, recovery: recovery).encoded()
        for cut in 0..<good.count { malformed(Array(good.prefix(cut)), "cut at \(cut)") }
        malformed(good + [0], "a byte past the end")
        var magic = good
        magic[0] = UInt8(ascii: "k")
        malformed(magic, "another magic")
        var zero = good
        zero[9] = 0
        malformed(zero, "format 0")
        var mask = good
        mask[10] = 1
        malformed(mask, "a PCR past 23")
        malformed(SealedKey(pcrs: [], primary: SealedKey.Object(publicArea: [], privateArea: [1]), recovery: nil).encoded(),
                  "no primary public area")
        let huge = SealedKey(pcrs: [], primary: SealedKey.Object(publicArea: Array(repeating: 1, count: 4097), privateArea: [1]),
                             recovery: nil)
        malformed(huge.encoded(), "an area over 4 KiB")
        XCTAssertNoThrow(try SealedKey.parse(SealedKey(pcrs: [], primary: SealedKey.Object(publicArea: Array(repeating: 1, count: 4096),
                                                                                           privateArea: [1]), recovery: nil).encoded()))
    }

    func testANewerFormatIsNamed() {
        var newer = SealedKey(pcrs: [7], primary: primary, recovery: recovery).encoded()
        newer[9] = 3
        XCTAssertThrowsError(try SealedKey.parse(newer)) { error in
            guard case .newerFormat(3)? = error as? SealedKey.ParseError else { return XCTFail("\(error)") }
            XCTAssertEqual("\(error)", "the sealed device key file has format 3, newer than this build's 2")
        }
    }

    func testPCRListsParseSortedAndRefuseWhatTheBankHasNot() {
        XCTAssertEqual(SealedKey.pcrList("7"), [7])
        XCTAssertEqual(SealedKey.pcrList("7,0,2"), [0, 2, 7])
        XCTAssertEqual(SealedKey.pcrList("none"), [])
        XCTAssertEqual(SealedKey.pcrList("23"), [23])
        for bad in ["", "24", "-1", "7,7", "7,", ",7", "a", "0x7", " 7", "none,7"] {
            XCTAssertNil(SealedKey.pcrList(bad), bad)
        }
    }

    func testTPMReturnCodesAreNamedAndGiveTheirStatus() throws {
        XCTAssertNil(TPMError.check(0, "Esys_Unseal"))
        // TPM 2.0 Part 2 response codes, with the session or parameter number ESYS reports.
        XCTAssertEqual(TPMError.check(0x99d, "Esys_Unseal", pcrs: [7]), .pcrMismatch(pcrs: [7]), "TPM_RC_POLICY_FAIL, session 1")
        XCTAssertEqual(TPMError.check(0x98e, "Esys_Unseal"), .wrongPassphrase, "TPM_RC_AUTH_FAIL, session 1")
        XCTAssertEqual(TPMError.check(0x9a2, "Esys_Unseal"), .wrongPassphrase, "TPM_RC_BAD_AUTH, session 1")
        XCTAssertEqual(TPMError.check(0x1df, "Esys_Load"), .otherTPM, "TPM_RC_INTEGRITY, parameter 1")
        XCTAssertEqual(TPMError.check(0x921, "Esys_Unseal"), .lockout, "TPM_RC_LOCKOUT")
        guard case .failed(let call, let code, let text)? = TPMError.check(0x101, "Esys_Create") else {
            return XCTFail("TPM_RC_FAILURE is another failure")
        }
        XCTAssertEqual(call, "Esys_Create")
        XCTAssertEqual(code, 0x101)
        XCTAssertFalse(text.isEmpty, "the stack's own text")
        // Another layer's code with the base of a policy failure is not one.
        guard case .failed? = TPMError.check(0x0007_009d, "Esys_Unseal") else { return XCTFail("an ESYS-layer code") }

        XCTAssertEqual(TPMError.unreachable(tcti: "swtpm:port=1", detail: "refused").status, .notAvailable)
        XCTAssertEqual(TPMError.pcrMismatch(pcrs: [0, 7]).status, .authFailed)
        XCTAssertEqual(TPMError.wrongPassphrase.status, .authFailed)
        XCTAssertEqual(TPMError.lockout.status, .authFailed)
        XCTAssertEqual(TPMError.otherTPM.status, .decode)
        XCTAssertEqual(TPMError.failed(call: "x", code: 1, text: "t").status, .internalComponent)
        XCTAssertTrue(TPMError.pcrMismatch(pcrs: [0, 7]).description.contains("PCR 0,7 changed"))
        XCTAssertTrue(TPMError.pcrMismatch(pcrs: [0, 7]).description.contains("keychainfs device-key reseal"))
        XCTAssertTrue(TPMError.unreachable(tcti: "swtpm:port=1", detail: "refused").description
            .hasPrefix("no TPM reachable through TCTI \"swtpm:port=1\" (refused)"))
        XCTAssertEqual(TPMError.failed(call: "Esys_Create", code: 0x101, text: "failure").description, "Esys_Create failed: 0x101 failure")
    }
}
