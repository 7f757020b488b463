import KeychainCore
import KeychainCrypto
import XCTest

/// PRODUCT 11: with no guarded memory left, the engine answers errSecAllocate. It never takes
/// the failure for a wrong passphrase (which would count against the unlock back-off) or for a
/// damaged item, and everything works again once memory is released.
final class OutOfGuardedMemoryTests: XCTestCase {
    var scratch: Scratch!
    private var savedBudget = 0

    override func setUpWithError() throws {
        scratch = try Scratch()
        savedBudget = SecureBytes.budget
    }

    override func tearDown() {
        SecureBytes.budget = savedBudget
        scratch = nil  // XCTest keeps every test case alive to the end of the run
    }

    /// Holds every free slot of every size class, with a budget that allows no new mapping.
    private func exhaustGuardedMemory() -> [SecureBytes] {
        SecureBytes.budget = SecureBytes.mappedBytes
        var hog: [SecureBytes] = []
        for shift in (6...20).reversed() {
            while let b = try? SecureBytes(count: 1 << shift) { hog.append(b) }
        }
        XCTAssertThrowsError(try SecureBytes(count: 1))
        return hog
    }

    func testUnlockOutOfMemoryIsAllocateNotAWrongPassphrase() throws {
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "alice", secret: "s3cret", ["pdmn": "ak"])
        vault.lock()
        let pass = try secret("correct horse")
        var hog = exhaustGuardedMemory()
        XCTAssertThrowsError(try vault.unlock(passphrase: pass)) { XCTAssertEqual($0 as? KeychainStatus, .allocate) }
        XCTAssertEqual(vault.lockState, .locked)
        hog.removeAll()
        SecureBytes.budget = savedBudget
        try vault.unlock(passphrase: pass)
        XCTAssertEqual(try vault.password(service: "db", account: "alice"), "s3cret")
    }

    func testReadOutOfMemoryIsAllocateNotDamage() throws {
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "alice", secret: "s3cret")
        var hog = exhaustGuardedMemory()
        XCTAssertThrowsError(try vault.password(service: "db", account: "alice")) {
            XCTAssertEqual($0 as? KeychainStatus, .allocate)
        }
        hog.removeAll()
        SecureBytes.budget = savedBudget
        XCTAssertEqual(try vault.password(service: "db", account: "alice"), "s3cret")
        XCTAssertTrue(try vault.verify().damaged.isEmpty)
    }
}
