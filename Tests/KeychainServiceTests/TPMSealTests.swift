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
        let sealed = try tpm.seal(secret, pcrs: [7, 8], recoveryAuth: auth)
        XCTAssertEqual(sealed.pcrs, [7, 8])
        XCTAssertTrue(sealed.hasRecoveryCopy)
        XCTAssertEqual(try SealedKey.parse(sealed.encoded()), sealed, "the file form reads back")
        XCTAssertEqual(bytes(try tpm.unseal(sealed)), bytes(secret))

        try tpm.extendPCR(8, with: Array(repeating: 0x5a, count: 32))
        XCTAssertThrowsError(try tpm.unseal(sealed)) { XCTAssertEqual($0 as? TPMError, .pcrMismatch(pcrs: [7, 8])) }
        XCTAssertThrowsError(try tpm.unsealRecovery(sealed, auth: try SecureBytes.random(count: 32))) {
            XCTAssertEqual($0 as? TPMError, .wrongPassphrase)
        }
        XCTAssertEqual(bytes(try tpm.unsealRecovery(sealed, auth: auth)), bytes(secret), "the recovery copy ignores PCRs")
        // More PCRs than one TPM2_PCR_Read returns: each is checked to be in the SHA-256 bank.
        let wide = try tpm.seal(secret, pcrs: Array(0..<12), recoveryAuth: nil)
        XCTAssertEqual(bytes(try tpm.unseal(wide)), bytes(secret))
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

    /// The file names the storage root key it was sealed under (format 2); a key with another
    /// name (another TPM's, or one an interposer answered with) is refused before anything is
    /// loaded or salted to it. A format 1 file, without the name, still unseals.
    func testTheStorageRootKeyIsCheckedAgainstTheNameInTheFile() throws {
        let tpm = try startTPM()
        let secret = try SecureBytes.random(count: 32)
        let auth = try SecureBytes.random(count: 32)
        let sealed = try tpm.seal(secret, pcrs: [7], recoveryAuth: auth)
        let name = try XCTUnwrap(sealed.rootName)
        XCTAssertEqual(name.count, 34, "SHA-256 name: algorithm and digest")
        XCTAssertEqual(Array(name.prefix(2)), [0x00, 0x0b])
        let file = sealed.encoded()
        XCTAssertEqual(Array(file[8..<10]), [0, 2])
        XCTAssertEqual(Array(file.suffix(34)), name)

        var other = file
        other[other.count - 1] ^= 1
        let pinnedElsewhere = try SealedKey.parse(other)
        XCTAssertThrowsError(try tpm.unseal(pinnedElsewhere)) { XCTAssertEqual($0 as? TPMError, .otherTPM) }
        XCTAssertThrowsError(try tpm.unsealRecovery(pinnedElsewhere, auth: auth)) { XCTAssertEqual($0 as? TPMError, .otherTPM) }

        var old = Array(file.dropLast(4 + 34))
        old[9] = 1
        let unpinned = try SealedKey.parse(old)
        XCTAssertNil(unpinned.rootName)
        XCTAssertEqual(unpinned.encoded(), old, "a format 1 file reads and writes back as format 1")
        XCTAssertEqual(bytes(try tpm.unseal(unpinned)), bytes(secret))
        XCTAssertEqual(bytes(try tpm.unsealRecovery(unpinned, auth: auth)), bytes(secret))
        XCTAssertEqual(bytes(try tpm.unseal(sealed)), bytes(secret))
    }

    /// A Secure Enclave key's blob names the storage root key too; a changed name is another
    /// TPM's key, and a format 1 blob (made before the name was kept) still signs.
    func testATokenKeyBlobNamesItsStorageRootKey() throws {
        let tpm = try startTPM()
        let key = try tpm.createTokenKey()
        let blob = key.blob
        XCTAssertEqual(Array(blob[8..<10]), [0, 2])
        let digest = Array(repeating: UInt8(7), count: 32)
        XCTAssertFalse(try tpm.sign(digest: digest, with: key).isEmpty)
        var other = blob
        other[other.count - 1] ^= 1
        XCTAssertThrowsError(try tpm.sign(digest: digest, with: try TokenKey(blob: other))) { XCTAssertEqual($0 as? TPMError, .otherTPM) }
        var old = Array(blob.dropLast(4 + 34))
        old[9] = 1
        let unnamed = try TokenKey(blob: old)
        XCTAssertEqual(unnamed.blob, old)
        XCTAssertFalse(try tpm.sign(digest: digest, with: unnamed).isEmpty)
    }

    /// swtpm here has no resource manager and three object slots: an object or session left
    /// loaded by a failing call would stay until the TPM restarts. A hundred failures of each
    /// kind (changed PCRs, another TPM's blob, a pinned name that differs, a peer point off the
    /// curve), each on a new connection as the daemon makes them, leave room for a working call.
    func testFailingCallsLeaveNothingLoadedInTheTPM() throws {
        let sw = try SoftwareTPM()
        addTeardownBlock { sw.stop() }
        let other = try startTPM()
        let secret = try SecureBytes.random(count: 32)
        let sealed = try TPM(tcti: sw.tcti).seal(secret, pcrs: [8], recoveryAuth: try SecureBytes.random(count: 32))
        let key = try TPM(tcti: sw.tcti).createTokenKey()
        let foreign = try other.createTokenKey()
        var renamed = key.blob
        renamed[renamed.count - 1] ^= 1
        let pinnedElsewhere = try TokenKey(blob: renamed)
        try TPM(tcti: sw.tcti).extendPCR(8, with: Array(repeating: 0x5a, count: 32))
        let offCurve = [UInt8(4)] + Array(repeating: 1, count: 64)
        for _ in 0..<100 {
            let tpm = try TPM(tcti: sw.tcti)
            XCTAssertThrowsError(try tpm.unseal(sealed))
            XCTAssertThrowsError(try tpm.sign(digest: Array(repeating: 1, count: 32), with: foreign))
            XCTAssertThrowsError(try tpm.sign(digest: Array(repeating: 1, count: 32), with: pinnedElsewhere))
            XCTAssertThrowsError(try tpm.sharedSecret(peer: offCurve, with: key))
        }
        let tpm = try TPM(tcti: sw.tcti)
        XCTAssertFalse(try tpm.sign(digest: Array(repeating: 1, count: 32), with: key).isEmpty)
        let again = try tpm.seal(secret, pcrs: [], recoveryAuth: nil)
        XCTAssertEqual(bytes(try tpm.unseal(again)), bytes(secret))
    }

    func testMalformedFilesAndPCRListsAreRefused() throws {
        XCTAssertThrowsError(try SealedKey.parse(Array("KCFSTPM".utf8) + [0, 0, 1]))
        XCTAssertThrowsError(try SealedKey.parse(Array("KCFSTPM".utf8) + [0, 0, 3] + Array(repeating: 0, count: 20))) {
            guard case SealedKey.ParseError.newerFormat(3)? = $0 as? SealedKey.ParseError else { return XCTFail("\($0)") }
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
