import Foundation
import KeychainCrypto
import KeychainTPM
import KeychainTestSupport
import XCTest

/// KeychainTPM against a software TPM, without the daemon: what sealing gives back and how each
/// refusal is named.
final class TPMSealTests: XCTestCase {
    func startTPM() throws -> TPM {
        let sw = try SoftwareTPM()
        addTeardownBlock { sw.stop() }
        return try TPM(tcti: sw.tcti)
    }

    func bytes(_ s: SecureBytes) -> [UInt8] { s.withUnsafeBytes { Array($0) } }

    func testSealedBytesComeBackAndAPCRChangeIsNamed() throws {
        let tpm = try startTPM()
        let secret = try SecureBytes.random(count: 32)
        let auth = try SecureBytes.random(count: 32)
        let sealed = try tpm.seal(secret, pcrs: [7, 16], recoveryAuth: auth)
        XCTAssertEqual(sealed.pcrs, [7, 16])
        XCTAssertTrue(sealed.hasRecoveryCopy)
        XCTAssertEqual(try SealedKey.parse(sealed.encoded()), sealed, "the file form reads back")
        XCTAssertEqual(bytes(try tpm.unseal(sealed)), bytes(secret))

        try tpm.extendPCR(16, with: Array(repeating: 0x5a, count: 32))
        XCTAssertThrowsError(try tpm.unseal(sealed)) { XCTAssertEqual($0 as? TPMError, .pcrMismatch(pcrs: [7, 16])) }
        XCTAssertThrowsError(try tpm.unsealRecovery(sealed, auth: try SecureBytes.random(count: 32))) {
            XCTAssertEqual($0 as? TPMError, .wrongPassphrase)
        }
        XCTAssertEqual(bytes(try tpm.unsealRecovery(sealed, auth: auth)), bytes(secret), "the recovery copy ignores PCRs")
    }

    func testWithoutPCRsThereIsNoRecoveryCopyAndAnotherTPMCannotLoadTheObject() throws {
        let tpm = try startTPM()
        let secret = try SecureBytes.random(count: 32)
        let sealed = try tpm.seal(secret, pcrs: [], recoveryAuth: try SecureBytes.random(count: 32))
        XCTAssertFalse(sealed.hasRecoveryCopy)
        XCTAssertEqual(bytes(try tpm.unseal(sealed)), bytes(secret))
        let other = try startTPM()
        XCTAssertThrowsError(try other.unseal(sealed)) { XCTAssertEqual($0 as? TPMError, .otherTPM) }
    }

    func testMalformedFilesAndPCRListsAreRefused() throws {
        XCTAssertThrowsError(try SealedKey.parse(Array("KCFSTPM".utf8) + [0, 0, 1]))
        XCTAssertThrowsError(try SealedKey.parse(Array("KCFSTPM".utf8) + [0, 0, 2] + Array(repeating: 0, count: 20))) {
            guard case SealedKey.ParseError.newerFormat(2)? = $0 as? SealedKey.ParseError else { return XCTFail("\($0)") }
        }
        XCTAssertFalse(SealedKey.looksSealed(Array(repeating: 0, count: 32)))
        XCTAssertEqual(SealedKey.pcrList("7"), [7])
        XCTAssertEqual(SealedKey.pcrList("7,0,2"), [0, 2, 7])
        XCTAssertEqual(SealedKey.pcrList("none"), [])
        for bad in ["", "24", "-1", "7,7", "7,", "x"] { XCTAssertNil(SealedKey.pcrList(bad), bad) }
        XCTAssertThrowsError(try TPM(tcti: "swtpm:host=127.0.0.1,port=1")) {
            guard case TPMError.unreachable(let tcti, _)? = $0 as? TPMError else { return XCTFail("\($0)") }
            XCTAssertEqual(tcti, "swtpm:host=127.0.0.1,port=1")
        }
    }
}
