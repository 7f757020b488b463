import Foundation
import KeychainTestSupport
import XCTest

/// Items that share a service and account in different access groups each have a file: the
/// plain name shows the first, the others carry their group (`%~agrp=`, docs/filesystem.md).
/// `-U` through the CLI updates the item where it lives, and the mount shows the new secret.
final class MountSharedNameTests: MountTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        let team = try h.run(["group", "add", "team"])
        XCTAssertEqual(team.status, 0, "\(team)")
    }

    func testBothItemsOfOneNameAreListedAndEachReadsItsOwnSecret() throws {
        try add("db", "app", "TEAM", ["--access-group", "team"])
        try add("db", "app", "MINE")
        let mnt = try mount()
        let names = try runProgram(["/bin/ls", "-1", mnt + "/db"]).stdoutText.split(separator: "\n").map(String.init)
        XCTAssertEqual(names.sorted(), ["app", "app%~agrp=default"], "ls shows both items")
        XCTAssertEqual(FS.read(mnt + "/db/app").bytes, Array("TEAM".utf8), "the plain name is the first item")
        XCTAssertEqual(FS.read(mnt + "/db/app%~agrp=default").bytes, Array("MINE".utf8))
        XCTAssertEqual(FS.read(mnt + "/db/app%~agrp=team").bytes, Array("TEAM".utf8), "a group's name always reaches its item")
        XCTAssertEqual(FS.xattr(mnt + "/db/app%~agrp=default", "user.keychain.access-group"), "default")
        assertErrno(FS.stat(mnt + "/db/app%~agrp=nosuch").errno, ENOENT, "a group that holds no such item")
        assertErrno(FS.stat(mnt + "/db/app%~agrp=").errno, ENOENT, "an empty group is no name")

        // Writing through a group's name changes that item only, and the plain name stays right.
        try Data("MINE2".utf8).write(to: URL(fileURLWithPath: mnt + "/db/app%~agrp=default"))
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-a", "app", "-w", "--access-group", "default"]).stdout, "MINE2\n")
        XCTAssertEqual(FS.read(mnt + "/db/app").bytes, Array("TEAM".utf8))
        try Data("TEAM2".utf8).write(to: URL(fileURLWithPath: mnt + "/db/app%~agrp=team"))
        XCTAssertEqual(FS.read(mnt + "/db/app").bytes, Array("TEAM2".utf8), "the plain name's cached entry went with the change")

        // rm of the plain name removes the item it shows, not its namesake.
        XCTAssertEqual(unlink(mnt + "/db/app"), 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-a", "app", "-w", "--access-group", "team"]).status, 44)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-a", "app", "-w"]).stdout, "MINE2\n")
        XCTAssertEqual(try runProgram(["/bin/ls", "-1", mnt + "/db"]).stdoutText, "app\n", "the one left has the plain name")
        XCTAssertEqual(FS.read(mnt + "/db/app").bytes, Array("MINE2".utf8))
    }

    /// Two items of one name in one group, one synchronizable: both listed, each read under its
    /// own name, and `rm` of the plain name removes only the item it shows.
    func testSyncedAndUnsyncedItemsOfOneNameInOneGroupAreBothListed() throws {
        try add("db", "app", "LOCAL")
        try add("db", "app", "SYNCED", ["--synchronizable"])
        let mnt = try mount()
        let names = try runProgram(["/bin/ls", "-1", mnt + "/db"]).stdoutText.split(separator: "\n").map(String.init)
        XCTAssertEqual(names.sorted(), ["app", "app%~agrp=default%~sync=1"], "ls shows both items")
        XCTAssertEqual(FS.read(mnt + "/db/app").bytes, Array("LOCAL".utf8))
        XCTAssertEqual(FS.read(mnt + "/db/app%~agrp=default%~sync=1").bytes, Array("SYNCED".utf8))
        XCTAssertEqual(FS.xattr(mnt + "/db/app%~agrp=default%~sync=1", "user.keychain.synchronizable"), "1")
        XCTAssertEqual(unlink(mnt + "/db/app"), 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-a", "app", "-w"]).stdout, "SYNCED\n",
                       "the synchronizable item is still there")
        XCTAssertEqual(try runProgram(["/bin/ls", "-1", mnt + "/db"]).stdoutText, "app\n", "the one left has the plain name")
        XCTAssertEqual(FS.read(mnt + "/db/app").bytes, Array("SYNCED".utf8))
    }

    func testUpdateOfAnItemInAnotherGroupShowsInTheMount() throws {
        try add("db", "app", "OLD", ["--access-group", "team"])
        let mnt = try mount()
        XCTAssertEqual(FS.read(mnt + "/db/app").bytes, Array("OLD".utf8))
        let u = try h.run(["add-generic-password", "-U", "-s", "db", "-a", "app", "-w", "NEW"])
        XCTAssertEqual(u.status, 0, "\(u)")
        XCTAssertEqual(FS.read(mnt + "/db/app").bytes, Array("NEW".utf8), "the mount serves the updated item")
        XCTAssertEqual(try runProgram(["/bin/ls", "-1", mnt + "/db"]).stdoutText, "app\n", "still one item")
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-a", "app", "-w"]).stdout, "NEW\n")
    }

    func testANewFileNamedWithAGroupLandsInThatGroup() throws {
        try add("db", "app", "MINE")
        let mnt = try mount()
        try Data("TEAM".utf8).write(to: URL(fileURLWithPath: mnt + "/db/app%~agrp=team"))
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-a", "app", "-w", "--access-group", "team"]).stdout, "TEAM\n")
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "db", "-a", "app", "-w", "--access-group", "default"]).stdout, "MINE\n")
        XCTAssertEqual(try runProgram(["/bin/ls", "-1", mnt + "/db"]).stdoutText.split(separator: "\n").sorted(), ["app", "app%~agrp=team"])
        // A rename keeps the item's group: another group's name is refused.
        XCTAssertEqual(rename(mnt + "/db/app%~agrp=team", mnt + "/db/app%~agrp=default"), -1)
        assertErrno(errno, EINVAL, "a rename into another group")
    }
}
