import Foundation
import KeychainTestSupport
import XCTest

/// With `--json`, a failure is also one JSON object on standard output (docs/cli.md, "JSON"):
/// `{"error", "status", "message", "detail", "exit"}`; standard error and the exit status stay
/// as without it.
final class CLIJSONErrorTests: HarnessTestCase {
    func error(_ r: CLIHarness.Result, file: StaticString = #filePath, line: UInt = #line) -> [String: Any] {
        XCTAssertEqual(r.stdout.filter { $0 == "\n" }.count, 1, "one line: \(r.stdout.debugDescription)", file: file, line: line)
        return h.jsonObject(r.stdout, file: file, line: line)
    }

    func testAMissingItemIsAnErrorObjectWithItsStatus() throws {
        for verb in ["find-generic-password", "find-internet-password"] {
            let r = try h.run([verb, "-s", "nothing.example", "-w", "--json"])
            XCTAssertEqual(r.status, 44, "\(verb): \(r)")
            XCTAssertEqual(r.stderr, Sentence.notFound, verb)
            let e = error(r)
            XCTAssertEqual(e["error"] as? String, "errSecItemNotFound", verb)
            XCTAssertEqual(e["status"] as? Int, -25300, verb)
            XCTAssertEqual(e["message"] as? String, "The specified item could not be found in the keychain.", verb)
            XCTAssertEqual(e["exit"] as? Int, 44, verb)
            XCTAssertNil(e["detail"], verb)
        }
    }

    func testTheMeaningIsItsDetail() throws {
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "m", "-a", "a", "-w", "-"], input: "x").status, 0)
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        let r = try h.run(["find-generic-password", "-s", "m", "-w", "--json"])
        XCTAssertEqual(r.status, 36, "\(r)")
        let e = error(r)
        XCTAssertEqual(e["error"] as? String, "errSecInteractionNotAllowed")
        XCTAssertEqual(e["detail"] as? String, "the vault is locked: run keychainfs unlock-keychain")
        XCTAssertFalse(r.stdout.contains("\"x\""), "no secret")
    }

    func testAUsageErrorIsAnObjectToo() throws {
        let r = try h.run(["find-generic-password", "--json", "--bogus"])
        XCTAssertEqual(r.status, 2, "\(r)")
        XCTAssertTrue(r.stderr.hasPrefix("keychainfs: unknown option --bogus\nusage: "), r.stderr)
        let e = error(r)
        XCTAssertEqual(e["error"] as? String, "usage")
        XCTAssertEqual(e["message"] as? String, "unknown option --bogus")
        XCTAssertEqual(e["exit"] as? Int, 2)
        XCTAssertNil(e["status"])
    }

    /// Every verb that documents `--json` answers a failure with an object: here a vault that
    /// does not exist (exit 50), the path in its detail.
    func testEveryJSONVerbPrintsAnErrorObject() throws {
        let missing = h.dir + "/missing.vault"
        let verbs: [[String]] = [["find-generic-password", "-s", "x"], ["find-internet-password", "-s", "x"], ["show-keychain-info"],
                                 ["dump-keychain"], ["verify"], ["audit"], ["audit", "--verify"], ["watch"], ["history"],
                                 ["find-certificate"], ["find-identity"]]
        for args in verbs {
            let r = try h.run(args + ["--json", missing], timeout: 30)
            XCTAssertEqual(r.status, 50, "\(args): \(r)")
            let e = error(r)
            XCTAssertEqual(e["error"] as? String, "errSecNoSuchKeychain", "\(args)")
            XCTAssertEqual(e["status"] as? Int, -25294, "\(args)")
            XCTAssertEqual(e["exit"] as? Int, 50, "\(args)")
            XCTAssertEqual(e["detail"] as? String, "no vault at \(missing): create one with keychainfs create-keychain \(missing)", "\(args)")
        }
        // A refusal the verb itself words: unmount of what is not mounted.
        let r = try h.run(["unmount", h.dir, "--json"])
        XCTAssertEqual(r.status, 44, "\(r)")
        XCTAssertEqual(r.stderr, "keychainfs: \(h.dir) is not mounted\n")
        XCTAssertEqual(error(r)["message"] as? String, "\(h.dir) is not mounted")
    }
}
