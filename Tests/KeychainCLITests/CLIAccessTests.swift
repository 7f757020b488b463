import Foundation
import KeychainTestSupport
import XCTest

/// Access groups as entitlements, with real Unix users running the CLI against root's daemon.
final class CLIAccessTests: HarnessTestCase {
    static let suffix = ClassUsers.runSuffix()
    static let owner = "kcao" + suffix, member = "kcam" + suffix, outsider = "kcax" + suffix, group = "kcag" + suffix
    static let accounts = ClassUsers(group: group, users: [owner, member, outsider], members: [member])

    override class var sharesRuntimeDirectory: Bool { true }

    override class func tearDown() {
        accounts.remove()
        super.tearDown()
    }

    override func setUpWithError() throws {
        try Self.accounts.require()
        try super.setUpWithError()
        let add = try h.run(["group", "add", "team", "--owner", Self.owner, "--group", Self.group, "--mode", "0440"])
        XCTAssertEqual(add.status, 0, "\(add)")
        let item = try h.run(["add-generic-password", "-s", "teamsvc", "-a", "deploy", "-w", "team-secret",
                              "--access-group", "team"])
        XCTAssertEqual(item.status, 0, "\(item)")
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "rootsvc", "-a", "root", "-w", "root-secret"]).status, 0)
    }

    func testMembersLockOnlyWhenTheirGroupGrantsIt() throws {
        let refused = try run(Self.member, ["lock-keychain"])
        XCTAssertEqual(refused.status, 51, "a member of team, which does not grant locking: \(refused)")
        // Apple's sentence (scripts compare it), then what it means: this caller may not lock.
        XCTAssertEqual(refused.stderr, Sentence.authFailed + "keychainfs: you may not lock \(h.vault): locking it is for root, "
                       + "and members of an access group its owner lets lock it (keychainfs group set GROUP --may-lock)\n")
        let json = try run(Self.member, ["lock-keychain", "--json"])
        XCTAssertEqual(json.status, 51, "\(json)")
        let object = h.jsonObject(json.stdout)
        XCTAssertEqual(object["error"] as? String, "errSecAuthFailed")
        XCTAssertEqual(object["status"] as? Int, -25293)
        XCTAssertEqual(object["exit"] as? Int, 51)
        XCTAssertTrue((object["detail"] as? String)?.hasPrefix("you may not lock \(h.vault): ") == true, json.stdout)
        XCTAssertEqual(try h.info()["state"] as? String, "unlocked")
        // The member still reads: the refusal is about the lock only.
        XCTAssertEqual(try run(Self.member, ["find-generic-password", "-s", "teamsvc", "-w"]).stdout, "team-secret\n")

        XCTAssertEqual(try run(Self.member, ["group", "set", "team", "--may-lock"]).status, 51, "members cannot grant it")
        XCTAssertEqual(try h.run(["group", "set", "team", "--may-lock", "--no-lock"]).status, 2)
        XCTAssertEqual(try h.run(["group", "set", "team", "--may-lock"]).status, 0)
        XCTAssertTrue(try h.run(["group", "list"]).stdout.contains("team owner=") , "listed")
        XCTAssertTrue(try h.run(["group", "list"]).stdout.contains(" may-lock"), "the grant is listed")
        XCTAssertEqual(try run(Self.outsider, ["lock-keychain"], initGroups: false).status, 51, "outsiders still cannot")
        let granted = try run(Self.member, ["lock-keychain"])
        XCTAssertEqual(granted.status, 0, "\(granted)")
        XCTAssertEqual(try h.info()["state"] as? String, "locked")
        XCTAssertEqual(try h.run(["unlock-keychain"], input: "pass phrase 1\n").status, 0)
        XCTAssertEqual(try h.run(["group", "set", "team", "--no-lock"]).status, 0)
        XCTAssertEqual(try run(Self.member, ["lock-keychain"]).status, 51, "taken back")
        XCTAssertEqual(try h.info()["state"] as? String, "unlocked")
    }

    func run(_ user: String, _ args: [String], initGroups: Bool = true, input: String? = nil) throws -> CLIHarness.Result {
        try h.run(args, input: input, prefix: ClassUsers.setpriv(user, initGroups: initGroups))
    }

    func testGroupListShowsTheTable() throws {
        let list = try h.run(["group", "list"])
        XCTAssertEqual(list.status, 0, "\(list)")
        let uid = getpwnam(Self.owner)!.pointee.pw_uid, gid = getgrnam(Self.group)!.pointee.gr_gid
        // Names where they resolve, numbers where they do not.
        XCTAssertEqual(list.stdout, "default owner=root group=root mode=0400\nteam owner=\(Self.owner) group=\(Self.group) mode=0440\n")
        XCTAssertNil(getpwuid(3_999_999_001)); XCTAssertNil(getgrgid(3_999_999_002))
        XCTAssertEqual(try h.run(["group", "add", "ghost", "--owner", "3999999001", "--group", "3999999002"]).status, 0)
        XCTAssertTrue(try h.run(["group", "list"]).stdout.hasSuffix("\nghost owner=3999999001 group=3999999002 mode=0400\n"))
        // JSON keeps the numbers and adds the names that resolve.
        let json = try h.run(["group", "list", "--json"])
        XCTAssertEqual(json.status, 0, "\(json)")
        let rows = (try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]]) ?? []
        let team = rows.first { $0["name"] as? String == "team" }, ghost = rows.first { $0["name"] as? String == "ghost" }
        XCTAssertEqual(team?["owner"] as? Int, Int(uid)); XCTAssertEqual(team?["gid"] as? Int, Int(gid))
        XCTAssertEqual(team?["owner-name"] as? String, Self.owner); XCTAssertEqual(team?["group-name"] as? String, Self.group)
        XCTAssertEqual(ghost?["owner"] as? Int, 3_999_999_001)
        XCTAssertNil(ghost?["owner-name"]); XCTAssertNil(ghost?["group-name"])
        XCTAssertEqual(try h.run(["group", "remove", "ghost"]).status, 0)
        let dup = try h.run(["group", "add", "team"])
        XCTAssertEqual(dup.status, 45, "\(dup)")
        let unknownUser = try h.run(["group", "add", "x", "--owner", "kcfs_nobody_such"])
        XCTAssertEqual(unknownUser.status, 2, "\(unknownUser)")
        XCTAssertTrue(unknownUser.stderr.hasPrefix("keychainfs: no such user kcfs_nobody_such\n"), unknownUser.stderr)
        XCTAssertEqual(try h.run(["group", "remove", "nosuch"]).status, 44)
    }

    /// `status` and `show-keychain-info` count, for a caller who is not an administrator, only the
    /// items of its own groups: the daemon's reply holds no other count (the CLI prints what the
    /// daemon sent), so a member cannot learn how many secrets others keep, nor see one added.
    func testStatusShowsOthersOnlyTheirGroupsCounts() throws {
        // The vault holds teamsvc (team) and rootsvc (default); three more of root's own.
        for n in 1...3 {
            XCTAssertEqual(try h.run(["add-generic-password", "-s", "root\(n)", "-a", "r", "-w", "-"], input: "x").status, 0)
        }
        let admin = try h.info()
        XCTAssertEqual(admin["items"] as? Int, 5, "root sees the whole vault")
        XCTAssertEqual(admin["items-scope"] as? String, "vault")
        for verb in ["show-keychain-info", "status"] {
            let r = try run(Self.member, [verb, "--json"])
            XCTAssertEqual(r.status, 0, "\(verb): \(r)")
            let member = h.jsonObject(r.stdout)
            XCTAssertEqual(member["items"] as? Int, 1, "\(verb): the member counts team's one item: \(r.stdout)")
            XCTAssertEqual(member["items-scope"] as? String, "groups", verb)
            XCTAssertEqual(member["count.ak"] as? Int, 1, verb)
            XCTAssertNil(member["mounts"], verb)
            XCTAssertNil(member["audit-lines"], verb)
        }
        let text = try run(Self.member, ["show-keychain-info"])
        XCTAssertTrue(text.stdout.contains("\nitems: 1 (in your access groups)\n"), text.stdout)
        let status = try run(Self.member, ["status"])
        XCTAssertTrue(status.stdout.contains("\n  items: 1 (ak 1) in your access groups\n"), status.stdout)
        // Root adds another item of its own: nothing changes for the member.
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "root4", "-a", "r", "-w", "-"], input: "x").status, 0)
        XCTAssertEqual(h.jsonObject(try run(Self.member, ["show-keychain-info", "--json"]).stdout)["items"] as? Int, 1)
        // An outsider (no group) sees no count at all.
        let outsider = h.jsonObject(try run(Self.outsider, ["status", "--json"], initGroups: false).stdout)
        XCTAssertNil(outsider["items"])
        XCTAssertEqual(outsider["groups"] as? [String], [])
    }

    func testOwnerAndMemberReadTheGroupsItem() throws {
        for user in [Self.owner, Self.member] {
            let plain = try run(user, ["find-generic-password", "-s", "teamsvc", "-w"])
            XCTAssertEqual(plain.status, 0, "\(user): \(plain)")
            XCTAssertEqual(plain.stdout, "team-secret\n", user)
            let named = try run(user, ["find-generic-password", "-s", "teamsvc", "-w", "--access-group", "team"])
            XCTAssertEqual(named.stdout, "team-secret\n", user)
            let info = try run(user, ["show-keychain-info"])
            XCTAssertTrue(info.stdout.hasSuffix("your access groups: team\n"), "\(user): \(info.stdout)")
            // Root's own item stays invisible, and its group cannot be named.
            XCTAssertEqual(try run(user, ["find-generic-password", "-s", "rootsvc"]).status, 44, user)
            let rootGroup = try run(user, ["find-generic-password", "-s", "rootsvc", "--access-group", "default"])
            XCTAssertEqual(rootGroup.status, 30, "\(user): \(rootGroup)")
            XCTAssertEqual(rootGroup.stderr, Sentence.missingEntitlement)
            // dump-keychain shows exactly the entitled items.
            let dump = try run(user, ["dump-keychain", "--json"])
            let items = try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [[String: Any]]
            XCTAssertEqual(items?.compactMap { ($0["attributes"] as? [String: Any])?["svce"] as? String }, ["teamsvc"], user)
        }
        // Mode 0440 lets members read, not write; the owner may write.
        let denied = try run(Self.member, ["add-generic-password", "-s", "membersvc", "-a", "m", "-w", "-"], input: "from-member")
        XCTAssertEqual(denied.status, 30, "\(denied)")
        XCTAssertEqual(denied.stderr, Sentence.missingEntitlement)
        XCTAssertEqual(try run(Self.member, ["delete-generic-password", "-s", "teamsvc"]).status, 30)
        XCTAssertEqual(try run(Self.member, ["add-generic-password", "-s", "teamsvc", "-a", "deploy", "-w", "-", "-U"],
                               input: "overwritten").status, 30)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "teamsvc", "-w"]).stdout, "team-secret\n")
        let byOwner = try run(Self.owner, ["add-generic-password", "-s", "ownersvc", "-a", "o", "-w", "-"], input: "from-owner")
        XCTAssertEqual(byOwner.status, 0, "\(byOwner)")
        // With the group write bit (0460) members write too; the item lands in their first group.
        XCTAssertEqual(try h.run(["group", "set", "team", "--mode", "0460"]).status, 0)
        let add = try run(Self.member, ["add-generic-password", "-s", "membersvc", "-a", "m", "-w", "-"], input: "from-member")
        XCTAssertEqual(add.status, 0, "\(add)")
        let json = h.jsonObject(try h.run(["find-generic-password", "-s", "membersvc", "--json"]).stdout)
        XCTAssertEqual((json["attributes"] as? [String: Any])?["agrp"] as? String, "team")
        XCTAssertEqual(try run(Self.owner, ["find-generic-password", "-s", "membersvc", "-w"]).stdout, "from-member\n")
    }

    /// `add -U` updates the item of its name wherever the caller sees it: one in a group the
    /// caller reads but may not change is refused, not shadowed by a copy in a group of its own.
    func testUpdateOfAnItemInAGroupTheCallerOnlyReadsExits30() throws {
        XCTAssertEqual(try h.run(["group", "add", "own", "--owner", Self.member]).status, 0)
        let u = try run(Self.member, ["add-generic-password", "-U", "-s", "teamsvc", "-a", "deploy", "-w", "-"], input: "shadow")
        XCTAssertEqual(u.status, 30, "\(u)")
        XCTAssertEqual(u.stderr, Sentence.missingEntitlement)
        XCTAssertEqual(try run(Self.member, ["find-generic-password", "-s", "teamsvc", "-a", "deploy", "-w"]).stdout, "team-secret\n")
        XCTAssertEqual(try run(Self.member, ["find-generic-password", "-s", "teamsvc", "--access-group", "own"]).status, 44)
        // Without -U the add goes to the member's own group, as any add does.
        XCTAssertEqual(try run(Self.member, ["add-generic-password", "-s", "teamsvc", "-a", "deploy", "-w", "-"], input: "mine").status, 0)
        XCTAssertEqual(try run(Self.member, ["find-generic-password", "-s", "teamsvc", "--access-group", "own", "-w"]).stdout, "mine\n")
    }

    func testMembershipComesFromTheKernelsGroupList() throws {
        // The same member without its supplementary groups is nobody.
        let r = try run(Self.member, ["find-generic-password", "-s", "teamsvc", "-w", "--access-group", "team"], initGroups: false)
        XCTAssertEqual(r.status, 30, "\(r)")
        XCTAssertEqual(r.stderr, Sentence.missingEntitlement)
        // Without group read in the mode, members lose access and the owner keeps it.
        XCTAssertEqual(try h.run(["group", "set", "team", "--mode", "0400"]).status, 0)
        XCTAssertEqual(try run(Self.member, ["find-generic-password", "-s", "teamsvc", "-w", "--access-group", "team"]).status, 30)
        XCTAssertEqual(try run(Self.owner, ["find-generic-password", "-s", "teamsvc", "-w"]).stdout, "team-secret\n")
        // Mode 0444 lets anyone in.
        XCTAssertEqual(try h.run(["group", "set", "team", "--mode", "0444"]).status, 0)
        XCTAssertEqual(try run(Self.outsider, ["find-generic-password", "-s", "teamsvc", "-w"], initGroups: false).stdout,
                       "team-secret\n")
    }

    func testOutsiderIsDenied() throws {
        let info = try run(Self.outsider, ["show-keychain-info"], initGroups: false)
        XCTAssertEqual(info.status, 0, "\(info)")
        XCTAssertTrue(info.stdout.hasSuffix("your access groups: (none)\n"), info.stdout)
        XCTAssertEqual(h.jsonObject(try run(Self.outsider, ["show-keychain-info", "--json"], initGroups: false).stdout)["groups"] as? [String], [])

        let named = try run(Self.outsider, ["find-generic-password", "-s", "teamsvc", "-w", "--access-group", "team"], initGroups: false)
        XCTAssertEqual(named.status, 30, "\(named)")
        XCTAssertEqual(named.stdout, "")
        XCTAssertEqual(named.stderr, Sentence.missingEntitlement)
        // A caller with no group at all gets errSecMissingEntitlement on every search (docs/semantics.md).
        let plainNoGroups = try run(Self.outsider, ["find-generic-password", "-s", "teamsvc", "-w"], initGroups: false)
        XCTAssertEqual(plainNoGroups.status, 44, "an outsider's search finds nothing: \(plainNoGroups)")
        XCTAssertEqual(plainNoGroups.stdout, "")
        XCTAssertEqual(try run(Self.outsider, ["add-generic-password", "-s", "x", "-a", "y", "-w", "z"], initGroups: false).status, 30)
        XCTAssertEqual(try run(Self.outsider, ["group", "list"], initGroups: false).stdout, "")
        // Administration is for root and the daemon's user only.
        for args in [["group", "add", "mine"], ["stop"], ["set-keychain-settings", "-t", "1"]] {
            let r = try run(Self.outsider, args, initGroups: false)
            XCTAssertEqual(r.status, 51, "\(args): \(r)")
            XCTAssertEqual(r.stderr, Sentence.authFailed + "keychainfs: you may not run \(args[0]) on \(h.vault): that is for root\n", "\(args)")
        }
        let lock = try run(Self.outsider, ["lock-keychain"], initGroups: false)
        XCTAssertEqual(lock.status, 51, "\(lock)")
        XCTAssertTrue(lock.stderr.hasPrefix(Sentence.authFailed + "keychainfs: you may not lock \(h.vault): "), lock.stderr)
        XCTAssertEqual(try h.info()["state"] as? String, "unlocked")
        XCTAssertEqual(try h.info()["lock-timeout"] as? Int, 0)

        // With a group of its own, the outsider's plain search finds nothing of the team's,
        // and naming the team's group is still refused.
        XCTAssertEqual(try h.run(["group", "add", "mine", "--owner", Self.outsider]).status, 0)
        let plain = try run(Self.outsider, ["find-generic-password", "-s", "teamsvc", "-w"], initGroups: false)
        XCTAssertEqual(plain.status, 44, "\(plain)")
        XCTAssertEqual(plain.stdout, "")
        XCTAssertEqual(plain.stderr, Sentence.notFound)
        XCTAssertEqual(try run(Self.outsider, ["find-generic-password", "-s", "teamsvc", "--access-group", "team"], initGroups: false).status, 30)
        XCTAssertEqual(try run(Self.outsider, ["delete-generic-password", "-s", "teamsvc"], initGroups: false).status, 44)
        XCTAssertEqual(try run(Self.outsider, ["delete-generic-password", "-s", "teamsvc", "--access-group", "team"], initGroups: false).status, 30)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "teamsvc", "-w"]).stdout, "team-secret\n", "the item survived")
        XCTAssertTrue(try run(Self.outsider, ["show-keychain-info"], initGroups: false).stdout.hasSuffix("your access groups: mine\n"))
        // The denials are in the daemon's log, with the caller's uid.
        let uid = getpwnam(Self.outsider)!.pointee.pw_uid
        let log = try daemonLog()
        XCTAssertTrue(log.contains("denied copyMatching uid=\(uid) "), log)
    }

    func testOutsiderRequestsDoNotHoldOffTheIdleLock() throws {
        XCTAssertEqual(try h.run(["set-keychain-settings", "-t", "2"]).status, 0)
        let start = Date()
        var locked = false
        while !locked && Date().timeIntervalSince(start) < 6 {
            let r = try run(Self.outsider, ["find-generic-password", "-s", "teamsvc", "--access-group", "team"], initGroups: false)
            XCTAssertEqual(r.status, 30, "\(r)")
            locked = try h.info()["state"] as? String == "locked"
            usleep(200_000)
        }
        XCTAssertTrue(locked, "the vault locks after 2 s although the outsider kept sending requests")
        XCTAssertEqual(try run(Self.owner, ["find-generic-password", "-s", "teamsvc", "-w"]).status, 36)
    }

    func testNonRootUserDoesNotStartItsOwnDaemon() throws {
        XCTAssertEqual(try h.run(["stop"]).status, 0)
        let r = try run(Self.outsider, ["find-generic-password", "-s", "teamsvc"], initGroups: false)
        XCTAssertEqual(r.status, 53, "\(r)")
        XCTAssertEqual(r.stderr, Sentence.notAvailable + "keychainfs: no vault daemon for \(h.vault)\n")
        XCTAssertEqual(h.daemons().count, 0, "no daemon started by the outsider")
        // Root's next command starts it again.
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "rootsvc", "-w"]).status, 36, "a fresh daemon is not yet unlocked")
        XCTAssertEqual(h.daemons().count, 1)
    }

    func testExecutableRestriction() throws {
        // Restricted to the keychainfs binary itself (given through a non-canonical path).
        let binary = CLIHarness.canonicalBinary
        let indirect = (binary as NSString).deletingLastPathComponent + "/./" + (binary as NSString).lastPathComponent
        let add = try h.run(["group", "add", "tools", "--exe", indirect])
        XCTAssertEqual(add.status, 0, "\(add)")
        XCTAssertTrue(try h.run(["group", "list"]).stdout.contains("tools owner=root group=root mode=0400 exe=\(binary)\n"))
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "toolsvc", "-a", "t", "-w", "tool-secret", "--access-group", "tools"]).status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "toolsvc", "-w"]).stdout, "tool-secret\n")
        XCTAssertTrue(h.jsonObject(try h.run(["show-keychain-info", "--json"]).stdout)["groups"] as? [String] == ["default", "team", "tools"])

        // Restricted to another program: even root running keychainfs is not entitled.
        XCTAssertEqual(try h.run(["group", "set", "tools", "--exe", "/usr/bin/true"]).status, 0)
        let plain = try h.run(["find-generic-password", "-s", "toolsvc", "-w"])
        XCTAssertEqual(plain.status, 44, "\(plain)")
        XCTAssertEqual(plain.stderr, Sentence.notFound)
        let named = try h.run(["find-generic-password", "-s", "toolsvc", "-w", "--access-group", "tools"])
        XCTAssertEqual(named.status, 30, "\(named)")
        XCTAssertEqual(named.stderr, Sentence.missingEntitlement)
        XCTAssertEqual(h.jsonObject(try h.run(["show-keychain-info", "--json"]).stdout)["groups"] as? [String], ["default", "team"])

        // Several programs: any one of them entitles.
        XCTAssertEqual(try h.run(["group", "set", "tools", "--exe", "/usr/bin/true", "--exe", binary]).status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "toolsvc", "-w"]).stdout, "tool-secret\n")

        // The restriction also applies to the group's owner.
        XCTAssertEqual(try h.run(["group", "set", "team", "--exe", "/usr/bin/true"]).status, 0)
        XCTAssertEqual(try run(Self.owner, ["find-generic-password", "-s", "teamsvc", "-w", "--access-group", "team"]).status, 30)
        XCTAssertEqual(try h.run(["group", "set", "team", "--exe", binary]).status, 0)
        XCTAssertEqual(try run(Self.owner, ["find-generic-password", "-s", "teamsvc", "-w"]).stdout, "team-secret\n")
        // --no-exe lifts it.
        XCTAssertEqual(try h.run(["group", "set", "tools", "--no-exe"]).status, 0)
        XCTAssertTrue(try h.run(["group", "list"]).stdout.contains("tools owner=root group=root mode=0400\n"))
    }

    /// The unlock back-off counts per user: another user's wrong guesses delay that user, not
    /// the owner's correct unlock (PRODUCT 4).
    func testAnotherUsersWrongUnlocksDoNotDelayTheOwner() throws {
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        XCTAssertEqual(try run(Self.outsider, ["unlock-keychain"], input: "guess one\n").status, 51)
        let second = try run(Self.outsider, ["unlock-keychain"], input: "guess two\n")
        XCTAssertEqual(second.status, 51, "\(second)")
        XCTAssertGreaterThanOrEqual(second.elapsed, 0.9, "the guesser waits after its own failure")

        let owner = try h.run(["unlock-keychain"], input: "pass phrase 1\n")
        XCTAssertEqual(owner.status, 0, "\(owner)")
        XCTAssertLessThan(owner.elapsed, 0.9, "the owner is not held up by another user's failures")
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "rootsvc", "-a", "root", "-w"]).stdout, "root-secret\n")

        // The owner's success leaves the guesser's count alone: its next attempt still waits 2 s.
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        let third = try run(Self.outsider, ["unlock-keychain"], input: "guess three\n")
        XCTAssertEqual(third.status, 51, "\(third)")
        XCTAssertGreaterThanOrEqual(third.elapsed, 1.0, "the guesser's back-off survives the owner's unlock")
    }

    func daemonLog() throws -> String {
        let files = try FileManager.default.contentsOfDirectory(atPath: h.runtimeDir).filter { $0.hasSuffix(".log") }
        return files.map { (try? String(contentsOfFile: h.runtimeDir + "/" + $0, encoding: .utf8)) ?? "" }.joined()
    }
}
