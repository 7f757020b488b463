import Foundation
import KeychainTestSupport
import SQLiteStore
import XCTest

/// `keychainfs verify`: a clean vault passes; a changed token, blob or audit line is found.
final class CLIVerifyTests: XCTestCase {
    var h: CLIHarness!

    override func setUpWithError() throws {
        h = try CLIHarness()
        try h.createVault()
        for (a, p) in [("one", "ak"), ("two", "ck"), ("three", "dku")] {
            XCTAssertEqual(try h.run(["add-generic-password", "-s", "svc", "-a", a, "--accessible", p, "-w", "-"],
                                     input: "secret-\(a)").status, 0)
        }
    }

    override func tearDown() {
        h?.tearDown()
        h = nil
        super.tearDown()
    }

    func testCleanVaultVerifies() throws {
        let r = try h.run(["verify"])
        XCTAssertEqual(r.status, 0, "\(r)")
        XCTAssertTrue(r.stdout.hasPrefix("items: 3 checked, 0 locked (not checked), 0 of another device, 0 damaged\n"), r.stdout)
        XCTAssertTrue(r.stdout.contains("audit log: ") && r.stdout.contains("chain intact"), r.stdout)
        // Locked classes are counted, not checked.
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        XCTAssertTrue(try h.run(["verify"]).stdout.hasPrefix("items: 2 checked, 1 locked (not checked)"))
    }

    func testChangedTokenAndBlobAreFound() throws {
        let db = try Connection(path: h.vault, create: false)
        // A lookup token of item 1 changed: lookups by that attribute would miss it.
        try db.execute("""
            UPDATE tokens SET token = randomblob(16)
            WHERE item = 1 AND token = (SELECT token FROM tokens WHERE item = 1 ORDER BY token LIMIT 1)
            """)
        let r1 = try h.run(["verify"])
        XCTAssertEqual(r1.status, 93, "\(r1)")
        XCTAssertTrue(r1.stdout.contains(" lookup tokens do not match\n"), r1.stdout)
        // A changed byte in item 3's sealed secret (0xff, or 0x00 where it was 0xff already).
        try db.execute("""
            UPDATE items SET data = substr(data, 1, 30)
                || CASE WHEN substr(data, 31, 1) = x'ff' THEN x'00' ELSE x'ff' END || substr(data, 32)
            WHERE rowid = 3
            """)
        let r2 = try h.run(["verify", "--json"])
        XCTAssertEqual(r2.status, 93)
        let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r2.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((obj["damaged"] as? [String])?.count, 2, "an array of the damaged items")
        XCTAssertEqual(obj["checked"] as? Int, 1)
    }

    func testBrokenAuditChainFailsVerify() throws {
        let log = h.vault + ".audit"
        var lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        lines.remove(at: 1)
        try lines.joined(separator: "\n").write(toFile: log, atomically: false, encoding: .utf8)
        let r = try h.run(["verify"])
        XCTAssertEqual(r.status, 93)
        XCTAssertTrue(r.stdout.contains("audit log: broken at line 2 of \(log)\n"), r.stdout)
    }
}
