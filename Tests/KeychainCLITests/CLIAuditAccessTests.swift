import Foundation
import KeychainTestSupport
import XCTest

/// Who reads the audit log, and whose names they see: administrators, and callers entitled to
/// a group that grants it (`--may-audit`). A reference resolves to SERVICE/ACCOUNT only for a
/// caller entitled to the item; anyone else sees the reference alone.
final class CLIAuditAccessTests: HarnessTestCase {
    static let suffix = ClassUsers.runSuffix()
    static let member = "kcdm" + suffix, outsider = "kcdx" + suffix, group = "kcdg" + suffix
    static let accounts = ClassUsers(group: group, users: [member, outsider], members: [member])

    override class var sharesRuntimeDirectory: Bool { true }

    override class func tearDown() {
        accounts.remove()
        super.tearDown()
    }

    override func setUpWithError() throws {
        try Self.accounts.require()
        try super.setUpWithError()
        // team: the member's (group read); own: the outsider's alone. Neither grants the log yet.
        XCTAssertEqual(try h.run(["group", "add", "team", "--group", Self.group, "--mode", "0440"]).status, 0)
        XCTAssertEqual(try h.run(["group", "add", "own", "--owner", Self.outsider, "--mode", "0400"]).status, 0)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "teamsvc", "-a", "deploy", "-w", "team-secret",
                                  "--access-group", "team"]).status, 0)
        XCTAssertEqual(try run(Self.member, ["find-generic-password", "-s", "teamsvc", "-w"]).stdout, "team-secret\n")
    }

    func run(_ user: String, _ args: [String]) throws -> CLIHarness.Result {
        try h.run(args, prefix: ClassUsers.setpriv(user))
    }

    /// The member's read of the team item, as `user` sees it.
    func memberRead(as user: String, json: Bool = false) throws -> CLIHarness.Result {
        let uid = String(getpwnam(Self.member)!.pointee.pw_uid)
        return try run(user, ["audit", "--event", "read", "--uid", uid] + (json ? ["--json"] : []))
    }

    func testEntitledCallerSeesNamesOutsiderSeesTheReference() throws {
        XCTAssertEqual(try memberRead(as: Self.member).status, 51, "no group grants the log yet")
        XCTAssertEqual(try h.run(["group", "set", "team", "--may-audit"]).status, 0)
        XCTAssertEqual(try h.run(["group", "set", "own", "--may-audit"]).status, 0)
        XCTAssertTrue(try h.run(["group", "list"]).stdout.contains(" may-audit\n"), "the grant is listed")

        let ref = try XCTUnwrap(try h.run(["audit", "--event", "add"]).stdout.split(separator: "\t").dropFirst(5).first.map(String.init))
        let mine = try memberRead(as: Self.member)
        XCTAssertEqual(mine.status, 0, "\(mine)")
        let fields = mine.stdout.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        XCTAssertEqual(fields.count, 1, mine.stdout)
        XCTAssertEqual(fields.first?[5], ref)
        XCTAssertEqual(fields.first?[8], "teamsvc/deploy", "entitled to team: the names")

        let theirs = try memberRead(as: Self.outsider)
        XCTAssertEqual(theirs.status, 0, "\(theirs)")
        let other = theirs.stdout.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        XCTAssertEqual(other.first?[5], ref, "the same line")
        XCTAssertEqual(other.first?[8], "-", "not entitled to team: the reference alone")
        XCTAssertFalse(theirs.stdout.contains("teamsvc") || theirs.stdout.contains("deploy"))
        let json = try memberRead(as: Self.outsider, json: true)
        XCTAssertEqual(h.jsonObject(json.stdout)["item"] as? [String: String], ["ref": ref, "class": "genp"])
        XCTAssertEqual(h.jsonObject(try memberRead(as: Self.member, json: true).stdout)["item"] as? [String: String],
                       ["ref": ref, "class": "genp", "service": "teamsvc", "account": "deploy"])
        // --item by name finds only items the caller may see.
        XCTAssertEqual(try run(Self.member, ["audit", "--item", "teamsvc/deploy"]).status, 0)
        XCTAssertEqual(try run(Self.outsider, ["audit", "--item", "teamsvc/deploy"]).status, 44)
        XCTAssertEqual(try run(Self.outsider, ["audit", "--item", ref]).status, 0)
        // Checking and rotating stay the administrators'.
        XCTAssertEqual(try run(Self.member, ["audit", "--verify"]).status, 51)
        XCTAssertEqual(try run(Self.member, ["audit", "rotate"]).status, 51)
        XCTAssertEqual(try h.run(["group", "set", "team", "--no-audit"]).status, 0)
        XCTAssertEqual(try memberRead(as: Self.member).status, 51, "taken back")
    }
}
