import Foundation
import KeychainTestSupport
import XCTest

/// The permission matrix through an `allow_other` mount, with real Unix users (PRODUCT 6):
/// access groups become owner, group and mode; the kernel enforces them and the daemon checks
/// again in open (including the executable where a group restricts it).
final class MountAccessTests: MountTestCase {
    static let suffix = ClassUsers.runSuffix()
    static let owner = "kcmo" + suffix, member = "kcmm" + suffix, outsider = "kcmx" + suffix, group = "kcmg" + suffix
    static let accounts = ClassUsers(group: group, users: [owner, member, outsider], members: [member])

    override class func tearDown() {
        accounts.remove()
        super.tearDown()
    }

    var mnt = ""
    var teamFile: String { mnt + "/app/team-acct" }
    var rootFile: String { mnt + "/app/root-acct" }
    var toolFile: String { mnt + "/toolsvc/t" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try Self.accounts.require()
        let team = try h.run(["group", "add", "team", "--owner", Self.owner, "--group", Self.group, "--mode", "0440"])
        XCTAssertEqual(team.status, 0, "\(team)")
        XCTAssertEqual(try h.run(["group", "add", "tools", "--mode", "0444"]).status, 0)
        try add("app", "team-acct", "team-secret", ["--access-group", "team"])
        try add("app", "root-acct", "root-secret")
        try add("toolsvc", "t", "tool-secret", ["--access-group", "tools"])
        // Restrict the group after adding its item: the CLI itself is not /bin/cat.
        let tools = try h.run(["group", "set", "tools", "--exe", "/bin/cat"])
        XCTAssertEqual(tools.status, 0, "\(tools)")
        mnt = try mount("allow_other")
    }

    func uid(_ user: String) -> UInt32 { getpwnam(user)!.pointee.pw_uid }

    /// Runs `argv` as `user` with its groups from /etc/group, or with none.
    func runAs(_ user: String, initGroups: Bool = true, _ argv: [String]) throws -> ProgramResult {
        try runProgram(ClassUsers.setpriv(user, initGroups: initGroups) + argv)
    }

    /// `cat PATH` as `user`: the bytes, or the error text.
    func cat(_ user: String?, _ path: String, initGroups: Bool = true) throws -> ProgramResult {
        guard let user else { return try runProgram(["/bin/cat", path]) }
        return try runAs(user, initGroups: initGroups, ["/bin/cat", path])
    }

    func assertReads(_ r: ProgramResult, _ expected: String, _ who: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.status, 0, "\(who): \(r)", file: file, line: line)
        XCTAssertEqual(r.stdoutText, expected, who, file: file, line: line)
    }

    func assertDenied(_ r: ProgramResult, _ who: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertNotEqual(r.status, 0, "\(who): \(r)", file: file, line: line)
        XCTAssertTrue(r.stderr.contains("Permission denied"), "\(who): \(r)", file: file, line: line)
        XCTAssertEqual(r.stdout, [], "\(who) read nothing", file: file, line: line)
    }

    func testOwnersGroupsAndModes() throws {
        let gid = getgrnam(Self.group)!.pointee.gr_gid
        let team = FS.stat(teamFile).st, root = FS.stat(rootFile).st, tool = FS.stat(toolFile).st
        XCTAssertEqual(team?.st_uid, uid(Self.owner))
        XCTAssertEqual(team?.st_gid, gid)
        XCTAssertEqual(team.map { $0.st_mode & 0o7777 }, 0o440)
        XCTAssertEqual(team.map { Int($0.st_size) }, 11)
        XCTAssertEqual(root?.st_uid, 0)
        XCTAssertEqual(root?.st_gid, 0)
        XCTAssertEqual(root.map { $0.st_mode & 0o7777 }, 0o400)
        XCTAssertEqual(tool.map { $0.st_mode & 0o7777 }, 0o444)
        XCTAssertEqual(FS.xattr(teamFile, "user.keychain.access-group"), "team")
        XCTAssertEqual(FS.xattr(rootFile, "user.keychain.access-group"), "default")
        // `ls -l` as another user shows the same owners.
        let ls = try runAs(Self.owner, ["/bin/ls", "-ln", mnt + "/app"])
        XCTAssertEqual(ls.status, 0, "\(ls)")
        XCTAssertTrue(ls.stdoutText.contains("-r--r----- 1 \(uid(Self.owner)) \(gid) 11 "), ls.stdoutText)
    }

    func testTeamFileReadByOwnerAndMemberOnly() throws {
        assertReads(try cat(Self.owner, teamFile), "team-secret", "owner")
        assertReads(try cat(Self.member, teamFile), "team-secret", "member")
        assertReads(try cat(nil, teamFile), "team-secret", "root")
        assertDenied(try cat(Self.outsider, teamFile, initGroups: false), "outsider")
        assertDenied(try cat(Self.member, teamFile, initGroups: false), "member without its supplementary groups")
    }

    func testDefaultGroupFileReadByRootOnly() throws {
        assertReads(try cat(nil, rootFile), "root-secret", "root")
        assertDenied(try cat(Self.owner, rootFile), "owner")
        assertDenied(try cat(Self.member, rootFile), "member")
        assertDenied(try cat(Self.outsider, rootFile, initGroups: false), "outsider")
    }

    func testListingIsFilteredByEntitlement() throws {
        func ls(_ user: String?, _ path: String, initGroups: Bool = true) throws -> [String] {
            let argv = ["/bin/ls", "-1", path]
            let r = try user.map { try runAs($0, initGroups: initGroups, argv) } ?? runProgram(argv)
            XCTAssertEqual(r.status, 0, "ls \(path) as \(user ?? "root"): \(r)")
            return r.stdoutText.split(separator: "\n").map(String.init)
        }
        // Root through ls is not /bin/cat, so the tools group's service is not listed for it.
        XCTAssertEqual(try ls(nil, mnt + "/app"), ["root-acct", "team-acct"])
        XCTAssertEqual(try ls(nil, mnt), ["app"])
        XCTAssertEqual(try ls(Self.owner, mnt + "/app"), ["team-acct"])
        XCTAssertEqual(try ls(Self.member, mnt + "/app"), ["team-acct"])
        XCTAssertEqual(try ls(Self.owner, mnt), ["app"])
        XCTAssertEqual(try ls(Self.outsider, mnt + "/app", initGroups: false), [], "the outsider sees no item")
        XCTAssertEqual(try ls(Self.outsider, mnt, initGroups: false), [], "nor any service")
        XCTAssertEqual(try ls(Self.member, mnt + "/app", initGroups: false), [])
    }

    func testNonRootWritesFail() throws {
        func sh(_ user: String, _ script: String, _ arg: String) throws -> ProgramResult {
            try runAs(user, ["/bin/sh", "-c", script, "sh", arg])
        }
        for user in [Self.owner, Self.member] {
            assertDenied(try sh(user, "printf changed > \"$1\"", teamFile), "\(user) overwriting the team file")
            assertDenied(try sh(user, "printf more >> \"$1\"", teamFile), "\(user) appending to the team file")
            assertDenied(try sh(user, "printf new > \"$1\"", mnt + "/app/new-acct"), "\(user) creating a file")
            assertDenied(try runAs(user, ["/bin/rm", "-f", teamFile]), "\(user) removing the team file")
            assertDenied(try runAs(user, ["/bin/mv", teamFile, mnt + "/app/moved"]), "\(user) renaming the team file")
            assertDenied(try runAs(user, ["/bin/mkdir", mnt + "/newsvc"]), "\(user) making a service")
            assertDenied(try runAs(user, ["/usr/bin/truncate", "-s", "0", teamFile]), "\(user) truncating the team file")
        }
        assertDenied(try runAs(Self.outsider, initGroups: false, ["/bin/sh", "-c", "printf x > \"$1\"", "sh", rootFile]),
                     "outsider overwriting the default file")
        // Nothing changed.
        XCTAssertEqual(try secret("app", "team-acct"), "team-secret")
        XCTAssertEqual(try secret("app", "root-acct"), "root-secret")
        XCTAssertEqual(try find("app", "new-acct").status, 44)
        XCTAssertEqual(try find("app", "moved").status, 44)
        XCTAssertEqual(FS.list(mnt + "/app").names?.sorted(), ["root-acct", "team-acct"])
    }

    func testExecutableRestrictedGroup() throws {
        // The CLI stores the canonical path: /bin is a symlink to /usr/bin on Debian 12.
        let canonical = CLIHarness.realPath("/bin/cat")
        let list = try h.run(["group", "list"])
        XCTAssertTrue(list.stdout.contains("tools owner=root group=root mode=0444 exe=\(canonical)\n"), list.stdout)

        assertReads(try runProgram(["/bin/cat", toolFile]), "tool-secret", "root via /bin/cat")
        assertReads(try runProgram([canonical, toolFile]), "tool-secret", "root via \(canonical)")
        assertDenied(try runProgram(["/usr/bin/head", "-c", "100", toolFile]), "root via head")
        assertDenied(try runProgram(["/usr/bin/od", "-c", toolFile]), "root via od")
        // This test process is no cat either: the daemon answers EACCES in open.
        assertErrno(FS.read(toolFile).errno, EACCES, "root's test process opening the tools file")
        // Mode 0444 lets anyone read, but only through the listed program.
        assertReads(try cat(Self.outsider, toolFile, initGroups: false), "tool-secret", "outsider via cat")
        assertDenied(try runAs(Self.outsider, initGroups: false, ["/usr/bin/head", "-c", "100", toolFile]), "outsider via head")
        // A copy of cat elsewhere is another executable.
        let copy = h.dir + "/mycat"
        try FileManager.default.copyItem(atPath: canonical, toPath: copy)
        assertDenied(try runProgram([copy, toolFile]), "root via a copy of cat")
    }
}
