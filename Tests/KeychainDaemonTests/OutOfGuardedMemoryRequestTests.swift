import Glibc
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// PRODUCT 11: a request that needs more guarded memory than the budget allows is answered
/// errSecAllocate, and the daemon goes on serving (it trapped before).
final class OutOfGuardedMemoryRequestTests: XCTestCase {
    private var d: InProcessDaemon!
    private var savedBudget = 0

    override func setUpWithError() throws {
        savedBudget = SecureBytes.budget
        d = try InProcessDaemon()
    }

    override func tearDown() {
        SecureBytes.budget = savedBudget
        d?.stop()
    }

    func testReadingASecretPastTheBudgetIsAllocateAndTheDaemonServesOn() throws {
        // 3 MiB: decrypting it needs a guarded buffer of its own, above the pooled classes.
        let big = String(repeating: "b", count: 3 << 20)
        try d.addPassword(service: "big", account: "a", secret: big)
        try d.addPassword(service: "small", account: "a", secret: "small one")
        // Warm the classes the small request and reply use, then allow no new mapping.
        XCTAssertEqual(secretText(try d.readPassword(service: "small", account: "a")), "small one")
        SecureBytes.budget = SecureBytes.mappedBytes

        XCTAssertEqual(try d.readPassword(service: "big", account: "a").status, .allocate)
        XCTAssertEqual(secretText(try d.readPassword(service: "small", account: "a")), "small one",
                       "requests that fit are still served")

        SecureBytes.budget = savedBudget
        XCTAssertEqual(secretText(try d.readPassword(service: "big", account: "a")), big)
    }
}
