import Foundation
import KeychainTestSupport
import XCTest

/// `add-*-password -U` names one item: the one of that name in whichever access group it lives,
/// or in the group `--access-group` names. Root's daemon, groups `default` and `team`.
final class CLIUpdateAcrossGroupsTests: HarnessTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        let team = try h.run(["group", "add", "team"])
        XCTAssertEqual(team.status, 0, "\(team)")
    }

    func add(_ args: [String], _ secret: String) throws -> CLIHarness.Result {
        try h.run(args + ["-w", "-"], input: secret)
    }

    /// The secret of db/app in `group`, or the exit status when there is none.
    func secret(in group: String, _ name: [String] = ["-s", "db", "-a", "app"]) throws -> String {
        let r = try h.run(["find-generic-password"] + name + ["-w", "--access-group", group])
        return r.status == 0 ? r.stdout : "exit \(r.status)"
    }

    /// Every item of the vault: class, service or server, account and access group.
    func items() throws -> [String] {
        let dump = try h.run(["dump-keychain", "--json"])
        XCTAssertEqual(dump.status, 0, "\(dump)")
        let list = try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [[String: Any]] ?? []
        return list.map { item in
            let a = item["attributes"] as? [String: Any] ?? [:]
            return [item["class"], a["svce"] ?? a["srvr"], a["acct"], a["agrp"]].map { "\($0 ?? "-")" }.joined(separator: " ")
        }
    }

    func testUpdateReachesTheItemInAnotherGroupAndKeepsItsGroup() throws {
        XCTAssertEqual(try add(["add-generic-password", "-s", "db", "-a", "app", "--access-group", "team"], "OLD").status, 0)
        let u = try add(["add-generic-password", "-U", "-s", "db", "-a", "app"], "NEW")
        XCTAssertEqual(u.status, 0, "\(u)")
        XCTAssertEqual(u.stdout + u.stderr, "")
        XCTAssertEqual(try h.run(["find-generic-password", "-w", "-s", "db", "-a", "app"]).stdout, "NEW\n")
        XCTAssertEqual(try items(), ["genp db app team"], "one item of that name, still in team")
        XCTAssertEqual(try secret(in: "default"), "exit 44")
        // An internet password is named by its whole key: another protocol is another item.
        let name = ["-s", "host.example", "-a", "me", "-r", "htps", "-P", "443", "-p", "/login"]
        XCTAssertEqual(try add(["add-internet-password"] + name + ["--access-group", "team"], "OLD").status, 0)
        XCTAssertEqual(try add(["add-internet-password", "-s", "host.example", "-a", "me", "-r", "http"], "HTTP").status, 0)
        XCTAssertEqual(try add(["add-internet-password", "-U"] + name, "NEW").status, 0)
        XCTAssertEqual(try h.run(["find-internet-password", "-w"] + name).stdout, "NEW\n")
        XCTAssertEqual(try h.run(["find-internet-password", "-w", "-s", "host.example", "-r", "http"]).stdout, "HTTP\n")
        XCTAssertEqual(try items(), ["genp db app team", "inet host.example me team", "inet host.example me default"])
        // Flags not given count as empty: -U of server and account alone is the item without a protocol.
        XCTAssertEqual(try add(["add-internet-password", "-s", "host.example", "-a", "me"], "BARE").status, 0)
        XCTAssertEqual(try add(["add-internet-password", "-U", "-s", "host.example", "-a", "me"], "BARE2").status, 0)
        XCTAssertEqual(try h.run(["find-internet-password", "-w", "-s", "host.example", "-r", "http"]).stdout, "HTTP\n")
        XCTAssertEqual(try h.run(["find-internet-password", "-w"] + name).stdout, "NEW\n")
        XCTAssertEqual(try items().count, 4)
    }

    func testItemsOfOneNameInTwoGroupsExit2AndNothingChanges() throws {
        XCTAssertEqual(try add(["add-generic-password", "-s", "db", "-a", "app"], "ONE").status, 0)
        XCTAssertEqual(try add(["add-generic-password", "-s", "db", "-a", "app", "--access-group", "team"], "TWO").status, 0)
        let u = try add(["add-generic-password", "-U", "-s", "db", "-a", "app"], "NEW")
        XCTAssertEqual(u.status, 2, "\(u)")
        XCTAssertEqual(u.stdout, "")
        let line = "keychainfs: 2 items match service \"db\" account \"app\" (groups: default, team); name one with --access-group\n"
        XCTAssertTrue(u.stderr.hasPrefix(line + "usage: keychainfs add-generic-password "), u.stderr)
        XCTAssertEqual(try secret(in: "default"), "ONE\n")
        XCTAssertEqual(try secret(in: "team"), "TWO\n")
        XCTAssertEqual(try items(), ["genp db app default", "genp db app team"])
    }

    func testAccessGroupNarrowsTheUpdateToThatGroup() throws {
        XCTAssertEqual(try add(["add-generic-password", "-s", "db", "-a", "app"], "ONE").status, 0)
        XCTAssertEqual(try add(["add-generic-password", "-s", "db", "-a", "app", "--access-group", "team"], "TWO").status, 0)
        let u = try add(["add-generic-password", "-U", "-s", "db", "-a", "app", "--access-group", "team", "-l", "team's"], "NEW")
        XCTAssertEqual(u.status, 0, "\(u)")
        XCTAssertEqual(try secret(in: "team"), "NEW\n")
        XCTAssertEqual(try secret(in: "default"), "ONE\n")
        let labels = try ["default", "team"].map { group in
            h.jsonObject(try h.run(["find-generic-password", "-s", "db", "-a", "app", "--access-group", group, "--json"]).stdout)
        }.map { ($0["attributes"] as? [String: Any])?["labl"] as? String }
        XCTAssertEqual(labels, ["db", "team's"], "only team's item changed")
        // No item of the name in the group named: -U adds it there.
        XCTAssertEqual(try add(["add-generic-password", "-U", "-s", "db", "-a", "new", "--access-group", "team"], "ADDED").status, 0)
        XCTAssertEqual(try secret(in: "team", ["-s", "db", "-a", "new"]), "ADDED\n")
        XCTAssertEqual(try items(), ["genp db app default", "genp db app team", "genp db new team"])
    }
}
