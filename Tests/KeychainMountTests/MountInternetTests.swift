import Foundation
import KeychainTestSupport
import XCTest

/// Internet passwords under `/.internet/<server>/<account>` (PRODUCT 6, 12): read, listed,
/// owned and locked as generic passwords are, one stable name per primary key.
final class MountInternetTests: MountTestCase {
    let server = "db.example.com"

    /// Adds an internet password through the CLI and fails the test when it does not succeed.
    func addInternet(_ server: String, _ account: String, _ secret: String, _ extra: [String] = [],
                     file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try h.run(["add-internet-password", "-s", server, "-a", account, "-w", secret] + extra, file: file, line: line)
        XCTAssertEqual(r.status, 0, "add \(server)/\(account): \(r)", file: file, line: line)
    }

    func internetSecret(_ args: [String]) throws -> String? {
        let r = try h.run(["find-internet-password", "-w"] + args)
        guard r.status == 0, r.stdout.hasSuffix("\n") else { return nil }
        return String(r.stdout.dropLast())
    }

    /// Two items of one server and account (the second with a port and protocol), another
    /// account in a 0440 group owned by gid 1, and a generic password whose service is `.internet`.
    func addFixtures() throws {
        XCTAssertEqual(try h.run(["group", "add", "team", "--owner", "0", "--group", "1", "--mode", "0440"]).status, 0)
        try addInternet(server, "alice", "plain-secret")
        try addInternet(server, "alice", "tls-secret", ["-P", "8443", "-r", "htps", "-l", "Alice over TLS"])
        try addInternet(server, "bob", "team-secret", ["--access-group", "team"])
        try add(".internet", "acct", "generic-secret")
    }

    func testInternetPasswordsReadWithTheirModeOwnerAndAttributes() throws {
        try addFixtures()
        let mnt = try mount()
        let dir = mnt + "/.internet/" + server
        XCTAssertEqual(FS.list(mnt).names?.sorted(), ["%2Einternet", ".internet"], "a service named .internet is escaped")
        XCTAssertEqual(FS.read(mnt + "/%2Einternet/acct").bytes, Array("generic-secret".utf8))
        XCTAssertEqual(FS.list(mnt + "/.internet").names, [server])
        XCTAssertEqual(FS.list(dir).names?.sorted(), ["alice", "alice%~ptcl=htps%~port=8443", "bob"])

        XCTAssertEqual(FS.read(dir + "/alice").bytes, Array("plain-secret".utf8))
        XCTAssertEqual(FS.read(dir + "/alice%~ptcl=htps%~port=8443").bytes, Array("tls-secret".utf8))
        XCTAssertEqual(FS.read(dir + "/bob").bytes, Array("team-secret".utf8))
        for (name, mode, gid, size) in [("alice", 0o400, 0, 12), ("bob", 0o440, 1, 11)] {
            let st = FS.stat(dir + "/" + name).st
            XCTAssertEqual(st.map { $0.st_mode & S_IFMT }, S_IFREG, name)
            XCTAssertEqual(st.map { Int($0.st_mode & 0o7777) }, mode, name)
            XCTAssertEqual(st.map { Int($0.st_gid) }, gid, name)
            XCTAssertEqual(st.map { Int($0.st_size) }, size, name)
        }
        // The same inode for the same name each time; names not in canonical form do not exist.
        XCTAssertEqual(FS.stat(dir + "/alice").st?.st_ino, FS.stat(dir + "/alice").st?.st_ino)
        XCTAssertNotEqual(FS.stat(dir + "/alice").st?.st_ino, FS.stat(dir + "/alice%~ptcl=htps%~port=8443").st?.st_ino)
        assertErrno(FS.stat(dir + "/alice%~port=8443%~ptcl=htps").errno, ENOENT, "qualifiers out of order")
        assertErrno(FS.stat(dir + "/alice%~port=8443").errno, ENOENT, "a qualifier left out")
        assertErrno(FS.stat(mnt + "/.internet/nosuch.example.com").errno, ENOENT, "a server with no item")

        let tls = dir + "/alice%~ptcl=htps%~port=8443"
        XCTAssertEqual(FS.xattr(tls, "user.keychain.class"), "inet")
        XCTAssertEqual(FS.xattr(tls, "user.keychain.server"), server)
        XCTAssertEqual(FS.xattr(tls, "user.keychain.port"), "8443")
        XCTAssertEqual(FS.xattr(tls, "user.keychain.protocol"), "htps")
        XCTAssertEqual(FS.xattr(tls, "user.keychain.label"), "Alice over TLS")
        XCTAssertEqual(FS.xattr(dir + "/bob", "user.keychain.access-group"), "team")
        XCTAssertEqual(FS.xattr(mnt + "/%2Einternet/acct", "user.keychain.class"), "genp")
        XCTAssertFalse(FS.listxattr(mnt + "/%2Einternet/acct").names?.contains("user.keychain.server") ?? true)

        // Each open is audited as a generic password's is.
        let audit = try h.run(["audit"]).stdout
        XCTAssertGreaterThanOrEqual(audit.components(separatedBy: "\tfile-open-read").count - 1, 4, audit)
        let file = try String(contentsOfFile: h.vault + ".audit", encoding: .utf8)  // `audit` shows root the names
        XCTAssertFalse(file.contains("tls-secret") || file.contains("alice"), "no name or secret in the log")
        XCTAssertFalse(audit.contains("tls-secret"), "no secret in audit's output")
    }

    func testWritesCreatesRenamesAndRemovesUnderInternet() throws {
        try addFixtures()
        let mnt = try mount()
        let dir = mnt + "/.internet/" + server
        // Writing a file replaces that item's secret only, at the close.
        XCTAssertEqual(FS.write(dir + "/alice%~ptcl=htps%~port=8443", "tls-new"), 0)
        XCTAssertEqual(try internetSecret(["-s", server, "-a", "alice", "-P", "8443"]), "tls-new")
        XCTAssertEqual(FS.read(dir + "/alice").bytes, Array("plain-secret".utf8), "the plain item is untouched")
        XCTAssertEqual(FS.read(dir + "/alice%~ptcl=htps%~port=8443").bytes, Array("tls-new".utf8))
        // A new server and a new item with a port, made through the mount.
        XCTAssertEqual(mkdir(mnt + "/.internet/git.example.com", 0o755), 0, FS.name(errno))
        XCTAssertEqual(FS.write(mnt + "/.internet/git.example.com/deploy%~port=2222", "ssh-key-pass"), 0)
        XCTAssertEqual(try internetSecret(["-s", "git.example.com", "-a", "deploy", "-P", "2222"]), "ssh-key-pass")
        XCTAssertEqual(FS.list(mnt + "/.internet").names?.sorted(), ["db.example.com", "git.example.com"])
        // mv changes the account and the port; across classes it is refused.
        XCTAssertEqual(rename(mnt + "/.internet/git.example.com/deploy%~port=2222", mnt + "/.internet/git.example.com/ci"), 0, FS.name(errno))
        XCTAssertEqual(try internetSecret(["-s", "git.example.com", "-a", "ci"]), "ssh-key-pass")
        XCTAssertNil(try internetSecret(["-s", "git.example.com", "-a", "deploy"]))
        XCTAssertEqual(FS.read(mnt + "/.internet/git.example.com/ci").bytes, Array("ssh-key-pass".utf8))
        XCTAssertEqual(rename(dir + "/alice", mnt + "/%2Einternet/alice"), -1)
        assertErrno(errno, EXDEV, "a rename from an internet password to a generic one")
        // rm deletes exactly the named item.
        XCTAssertEqual(unlink(mnt + "/.internet/git.example.com/ci"), 0, FS.name(errno))
        XCTAssertNil(try internetSecret(["-s", "git.example.com"]))
        assertErrno(FS.stat(mnt + "/.internet/git.example.com/ci").errno, ENOENT, "stat after rm")
        XCTAssertEqual(try internetSecret(["-s", server, "-a", "alice", "-P", "8443"]), "tls-new")
        // The class directory itself stays.
        XCTAssertEqual(rmdir(mnt + "/.internet"), -1)
        XCTAssertEqual(mkdir(mnt + "/.internet", 0o755), -1)
        assertErrno(errno, EEXIST, "mkdir of .internet")
    }

    func testLockHidesInternetFilesAndViewsShowOnlyTheirGroups() throws {
        try addFixtures()
        let mnt = try mount()
        let team = try mount("groups=team,mode=0400")
        let dir = mnt + "/.internet/" + server
        XCTAssertEqual(FS.read(dir + "/alice").bytes, Array("plain-secret".utf8))
        XCTAssertEqual(FS.list(dir).names?.count, 3)

        // The view shows only the team's item, with the view's mode.
        XCTAssertEqual(FS.list(team + "/.internet/" + server).names, ["bob"])
        assertErrno(FS.stat(team + "/.internet/" + server + "/alice").errno, ENOENT, "a file of another group in a view")
        XCTAssertEqual(FS.stat(team + "/.internet/" + server + "/bob").st.map { Int($0.st_mode & 0o7777) }, 0o400)
        XCTAssertEqual(FS.list(team).names, [".internet"], "the view has no generic password of its group")

        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        // No sleep: gone before the command returned.
        assertErrno(FS.stat(dir + "/alice").errno, ENOENT, "stat after the lock")
        assertErrno(FS.read(dir + "/bob").errno, ENOENT, "open after the lock")
        assertErrno(FS.stat(mnt + "/.internet/" + server).errno, ENOENT, "the server's directory after the lock")
        XCTAssertEqual(FS.list(mnt + "/.internet").names, [], "nothing listed after the lock")
        XCTAssertEqual(try h.run(["unlock-keychain"], input: passphrase + "\n").status, 0)
        XCTAssertEqual(FS.read(dir + "/alice%~ptcl=htps%~port=8443").bytes, Array("tls-secret".utf8))
        XCTAssertEqual(FS.list(dir).names?.count, 3)
        // A change through the CLI shows at once.
        XCTAssertEqual(try h.run(["delete-internet-password", "-s", server, "-a", "bob"]).status, 0)
        assertErrno(FS.stat(dir + "/bob").errno, ENOENT, "stat right after a delete through the CLI")
    }
}
