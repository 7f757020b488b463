import Foundation
import KeychainTestSupport
import XCTest

/// Changing items through the mount, each change checked through the CLI afterwards (PRODUCT 6).
final class MountWriteTests: MountTestCase {
    func testEchoCreatesANewItem() throws {
        try add("svc", "existing", "old")
        let mnt = try mount()
        assertErrno(FS.write(mnt + "/svc/fresh", "X"), 0, "echo -n X > svc/fresh")
        XCTAssertEqual(try secret("svc", "fresh"), "X")
        XCTAssertEqual(FS.read(mnt + "/svc/fresh").bytes, Array("X".utf8))
        if let st = FS.stat(mnt + "/svc/fresh").st {
            XCTAssertEqual(Int(st.st_size), 1)
            XCTAssertEqual(st.st_mode & 0o7777, 0o400, "a new file takes its group's mode, not the creat mode")
            XCTAssertEqual(st.st_uid, 0)
        } else {
            XCTFail("stat svc/fresh")
        }
        XCTAssertEqual(FS.xattr(mnt + "/svc/fresh", "user.keychain.access-group"), "default")
        XCTAssertEqual(FS.xattr(mnt + "/svc/fresh", "user.keychain.accessible"), "ak")
        XCTAssertEqual(FS.list(mnt + "/svc").names?.sorted(), ["existing", "fresh"])
        // Bytes that are not text.
        let bytes: [UInt8] = [0, 1, 2, 0xFF, 0x0A, 0xC3, 0xA9]
        assertErrno(FS.write(mnt + "/svc/binary", bytes), 0, "write binary")
        XCTAssertEqual(FS.read(mnt + "/svc/binary").bytes, bytes)
        // An empty file is an item with an empty secret (touch / creat then close).
        assertErrno(FS.write(mnt + "/svc/empty", []), 0, "touch")
        XCTAssertEqual(try find("svc", "empty").status, 0)
        XCTAssertEqual(FS.stat(mnt + "/svc/empty").st.map { Int($0.st_size) }, 0)
        // O_EXCL on an existing file.
        assertErrno(FS.write(mnt + "/svc/existing", Array("x".utf8), flags: O_WRONLY | O_CREAT | O_EXCL), EEXIST, "O_EXCL")
        XCTAssertEqual(try secret("svc", "existing"), "old")
    }

    /// The close of a created file stores its item, written or not: the kernel sends RELEASE
    /// after close(2) returns (here, only at the last descriptor's close), so a search right
    /// after `touch` must not depend on it.
    func testACreatedFileIsAnItemWhenItsCreatorClosesIt() throws {
        let mnt = try mount()
        try add("svc", "existing", "old")
        let fd = open(mnt + "/svc/touched", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0, "creat: errno \(errno)")
        let kept = dup(fd)  // holds the RELEASE back until the end
        defer { if kept >= 0 { close(kept) } }
        XCTAssertEqual(close(fd), 0)
        XCTAssertEqual(try find("svc", "touched").status, 0, "the item exists once its creator's close returned")
        XCTAssertEqual(try secret("svc", "touched"), "")
    }

    func testEchoReplacesAnExistingSecret() throws {
        try add("svc", "acct", "original secret", ["-l", "My label", "-j", "keep me"])
        let mnt = try mount()
        let path = mnt + "/svc/acct"
        assertErrno(FS.write(path, "a much longer replacement secret"), 0, "echo > longer")
        XCTAssertEqual(try secret("svc", "acct"), "a much longer replacement secret")
        assertErrno(FS.write(path, "short"), 0, "echo > shorter")
        XCTAssertEqual(try secret("svc", "acct"), "short", "no bytes of the longer secret are left")
        XCTAssertEqual(FS.read(path).bytes, Array("short".utf8))
        XCTAssertEqual(FS.stat(path).st.map { Int($0.st_size) }, 5)
        // The item is the same item: attributes kept, version moved.
        let attrs = try attributes("svc", "acct")
        XCTAssertEqual(attrs["labl"] as? String, "My label")
        XCTAssertEqual(attrs["icmt"] as? String, "keep me")
        XCTAssertEqual(FS.xattr(path, "user.keychain.version"), "3")
        // Appending (echo >>) and writing in the middle (O_RDWR without O_TRUNC).
        assertErrno(FS.write(path, Array("+more".utf8), flags: O_WRONLY | O_APPEND), 0, "echo >>")
        XCTAssertEqual(try secret("svc", "acct"), "short+more")
        let fd = open(path, O_RDWR)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(Glibc.pwrite(fd, "SH", 2, 0), 2)
        XCTAssertEqual(close(fd), 0)
        XCTAssertEqual(try secret("svc", "acct"), "SHort+more")
    }

    func testEditorStyleSave() throws {
        try add("app", "config", "version one", ["-l", "Config label", "-j", "a comment"])
        let mnt = try mount()
        let target = mnt + "/app/config", temp = mnt + "/app/.config.swp"
        // vim's sequence: write the new contents to a temporary file, rename it over the original.
        assertErrno(FS.write(temp, "version two\n"), 0, "write .config.swp")
        XCTAssertEqual(try secret("app", ".config.swp"), "version two\n")
        assertErrno(FS.check(rename(temp, target)), 0, "rename .config.swp config")

        XCTAssertEqual(FS.read(target).bytes, Array("version two\n".utf8))
        XCTAssertEqual(try secret("app", "config"), "version two\n")
        let attrs = try attributes("app", "config")
        XCTAssertEqual(attrs["labl"] as? String, "Config label", "the target keeps its label")
        XCTAssertEqual(attrs["icmt"] as? String, "a comment", "and its comment")
        XCTAssertEqual(FS.xattr(target, "user.keychain.label"), "Config label")
        XCTAssertEqual(try find("app", ".config.swp").status, 44, "the temporary item is gone")
        assertErrno(FS.stat(temp).errno, ENOENT, "the temporary file is gone")
        XCTAssertEqual(FS.list(mnt + "/app").names, ["config"])

        // A second save, this time through a name in another style (gedit's .goutputstream-XXXX).
        let temp2 = mnt + "/app/.goutputstream-ABC123"
        assertErrno(FS.write(temp2, "version three"), 0, "write temp2")
        assertErrno(FS.check(rename(temp2, target)), 0, "rename temp2 config")
        XCTAssertEqual(try secret("app", "config"), "version three")
        XCTAssertEqual(try attributes("app", "config")["labl"] as? String, "Config label")
        XCTAssertEqual(FS.list(mnt + "/app").names, ["config"])
    }

    func testRemove() throws {
        try add("svc", "doomed", "bye")
        try add("svc", "stays", "here")
        let mnt = try mount()
        XCTAssertEqual(FS.read(mnt + "/svc/doomed").bytes, Array("bye".utf8))
        assertErrno(FS.check(unlink(mnt + "/svc/doomed")), 0, "rm")
        XCTAssertEqual(try find("svc", "doomed").status, 44, "the item is deleted")
        assertErrno(FS.stat(mnt + "/svc/doomed").errno, ENOENT, "stat after rm")
        XCTAssertEqual(FS.list(mnt + "/svc").names, ["stays"])
        assertErrno(FS.check(unlink(mnt + "/svc/doomed")), ENOENT, "rm again")
        XCTAssertEqual(try secret("svc", "stays"), "here")
        // Removing the last item of a service leaves no service behind.
        assertErrno(FS.check(unlink(mnt + "/svc/stays")), 0, "rm the last")
        XCTAssertEqual(try find("svc", "stays").status, 44)
        XCTAssertEqual(FS.list(mnt).names, [])
    }

    func testRenameAccountAndMoveBetweenServices() throws {
        try add("svc", "a", "secret-a", ["-l", "label a"])
        try add("other", "x", "secret-x")
        let mnt = try mount()
        assertErrno(FS.check(rename(mnt + "/svc/a", mnt + "/svc/b")), 0, "mv a b")
        XCTAssertEqual(try find("svc", "a").status, 44)
        XCTAssertEqual(try secret("svc", "b"), "secret-a")
        XCTAssertEqual(try attributes("svc", "b")["labl"] as? String, "label a", "mv keeps the item's attributes")
        XCTAssertEqual(FS.list(mnt + "/svc").names, ["b"])
        assertErrno(FS.stat(mnt + "/svc/a").errno, ENOENT, "the old name")
        XCTAssertEqual(FS.read(mnt + "/svc/b").bytes, Array("secret-a".utf8))

        // Across services: service and account change.
        assertErrno(FS.check(rename(mnt + "/svc/b", mnt + "/other/y")), 0, "mv svc/b other/y")
        XCTAssertEqual(try secret("other", "y"), "secret-a")
        XCTAssertEqual(try find("svc", "b").status, 44)
        XCTAssertEqual(FS.list(mnt + "/other").names?.sorted(), ["x", "y"])

        // RENAME_NOREPLACE-less mv over an existing item replaces it (the editor case); a missing
        // source is ENOENT.
        assertErrno(FS.check(rename(mnt + "/other/nope", mnt + "/other/z")), ENOENT, "mv of a missing file")
    }

    func testRenameService() throws {
        try add("oldsvc", "one", "1")
        try add("oldsvc", "two", "2")
        try add("taken", "t", "t")
        let mnt = try mount()
        XCTAssertEqual(FS.list(mnt + "/oldsvc").names?.sorted(), ["one", "two"])
        assertErrno(FS.check(rename(mnt + "/oldsvc", mnt + "/newsvc")), 0, "mv oldsvc newsvc")
        XCTAssertEqual(try secret("newsvc", "one"), "1")
        XCTAssertEqual(try secret("newsvc", "two"), "2")
        XCTAssertEqual(try find("oldsvc", "one").status, 44)
        XCTAssertEqual(FS.list(mnt).names?.sorted(), ["newsvc", "taken"])
        XCTAssertEqual(FS.list(mnt + "/newsvc").names?.sorted(), ["one", "two"])
        assertErrno(FS.stat(mnt + "/oldsvc").errno, ENOENT, "the old directory")
        XCTAssertEqual(FS.read(mnt + "/newsvc/two").bytes, Array("2".utf8))
        // Onto an existing service: refused, nothing moved.
        let e = FS.check(rename(mnt + "/newsvc", mnt + "/taken"))
        XCTAssertTrue(e == ENOTEMPTY || e == EEXIST, "mv onto a service with items: \(FS.name(e))")
        XCTAssertEqual(try secret("newsvc", "one"), "1")
        XCTAssertEqual(try secret("taken", "t"), "t")
    }

    func testMkdirMakesAService() throws {
        try add("existing", "e", "e")
        let mnt = try mount()
        assertErrno(FS.check(mkdir(mnt + "/made", 0o700)), 0, "mkdir made")
        if let st = FS.stat(mnt + "/made").st {
            XCTAssertEqual(st.st_mode & S_IFMT, S_IFDIR)
        } else {
            XCTFail("stat made")
        }
        XCTAssertEqual(FS.list(mnt).names?.sorted(), ["existing", "made"])
        XCTAssertEqual(FS.list(mnt + "/made").names, [])
        assertErrno(FS.write(mnt + "/made/acct", "in a new service"), 0, "write made/acct")
        XCTAssertEqual(try secret("made", "acct"), "in a new service")
        XCTAssertEqual(FS.list(mnt + "/made").names, ["acct"])
        assertErrno(FS.check(mkdir(mnt + "/existing", 0o755)), EEXIST, "mkdir of an existing service")
        assertErrno(FS.check(mkdir(mnt + "/existing/sub", 0o755)), EPERM, "mkdir below a service")
        // An empty service can be removed; one with items cannot.
        assertErrno(FS.check(mkdir(mnt + "/empty", 0o755)), 0, "mkdir empty")
        assertErrno(FS.check(rmdir(mnt + "/empty")), 0, "rmdir empty")
        assertErrno(FS.stat(mnt + "/empty").errno, ENOENT, "after rmdir")
        assertErrno(FS.check(rmdir(mnt + "/made")), ENOTEMPTY, "rmdir of a service with items")
    }

    func testTruncate() throws {
        try add("svc", "acct", "abcdefgh", ["-l", "kept"])
        let mnt = try mount()
        let path = mnt + "/svc/acct"
        assertErrno(FS.check(truncate(path, 3)), 0, "truncate -s 3")
        XCTAssertEqual(try secret("svc", "acct"), "abc")
        XCTAssertEqual(FS.read(path).bytes, Array("abc".utf8))
        XCTAssertEqual(FS.stat(path).st.map { Int($0.st_size) }, 3)
        XCTAssertEqual(try attributes("svc", "acct")["labl"] as? String, "kept")
        // Through a descriptor: ftruncate, then close commits.
        let fd = open(path, O_RDWR)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(ftruncate(fd, 1), 0)
        XCTAssertEqual(close(fd), 0)
        XCTAssertEqual(try secret("svc", "acct"), "a")
        // Growing pads with NUL bytes.
        assertErrno(FS.check(truncate(path, 4)), 0, "truncate -s 4")
        XCTAssertEqual(FS.read(path).bytes, [0x61, 0, 0, 0])
        assertErrno(FS.check(truncate(path, 0)), 0, "truncate -s 0")
        XCTAssertEqual(FS.read(path).bytes, [])
        XCTAssertEqual(try find("svc", "acct").status, 0, "an empty secret is still an item")
    }

    func testChmodAndChownAreRefused() throws {
        try add("svc", "acct", "secret")
        let mnt = try mount()
        let path = mnt + "/svc/acct"
        assertErrno(FS.check(chmod(path, 0o644)), EPERM, "chmod 644")
        assertErrno(FS.check(chown(path, 1000, 1000)), EPERM, "chown 1000:1000")
        assertErrno(FS.check(chmod(mnt + "/svc", 0o777)), EPERM, "chmod of a service")
        XCTAssertEqual(FS.stat(path).st.map { $0.st_mode & 0o7777 }, 0o400)
        XCTAssertEqual(FS.stat(path).st.map { $0.st_uid }, 0)
        XCTAssertEqual(try secret("svc", "acct"), "secret")
        // Unknown and read-only extended attributes are refused too.
        assertErrno(FS.setxattr(path, "user.keychain.version", "9"), EPERM, "setxattr version")
        assertErrno(FS.setxattr(path, "user.other", "x"), ENOTSUP, "setxattr user.other")
    }

    func testCLIChangesAppearWithoutRemount() throws {
        try add("svc", "first", "one")
        let mnt = try mount()
        // Let the kernel cache the directory and a negative lookup of the new name.
        XCTAssertEqual(FS.list(mnt + "/svc").names, ["first"])
        assertErrno(FS.stat(mnt + "/svc/second").errno, ENOENT, "before the add")
        XCTAssertEqual(FS.read(mnt + "/svc/first").bytes, Array("one".utf8))

        try add("svc", "second", "two")
        XCTAssertTrue(h.waitUntil(2) { FS.read(mnt + "/svc/second").bytes == Array("two".utf8) }, "the CLI's add shows")
        XCTAssertEqual(FS.list(mnt + "/svc").names?.sorted(), ["first", "second"])
        try add("brand-new-service", "x", "y")
        XCTAssertTrue(h.waitUntil(2) { FS.list(mnt).names?.sorted() == ["brand-new-service", "svc"] }, "a new service shows")

        let u = try h.run(["add-generic-password", "-U", "-s", "svc", "-a", "first", "-w", "one, updated"])
        XCTAssertEqual(u.status, 0, "\(u)")
        XCTAssertTrue(h.waitUntil(2) { FS.read(mnt + "/svc/first").bytes == Array("one, updated".utf8) }, "the CLI's update shows")
        XCTAssertEqual(FS.stat(mnt + "/svc/first").st.map { Int($0.st_size) }, 12, "with its new size")

        XCTAssertEqual(try h.run(["delete-generic-password", "-s", "svc", "-a", "second"]).status, 0)
        XCTAssertTrue(h.waitUntil(2) { FS.stat(mnt + "/svc/second").errno == ENOENT }, "the CLI's delete shows")
        XCTAssertEqual(FS.list(mnt + "/svc").names, ["first"])
    }

    func testOneOpenSeesOneVersion() throws {
        try add("svc", "acct", "version one")
        let mnt = try mount()
        let fd = open(mnt + "/svc/acct", O_RDONLY)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        XCTAssertEqual(FS.pread(fd, count: 4, offset: 0).bytes, Array("vers".utf8))
        XCTAssertEqual(try h.run(["add-generic-password", "-U", "-s", "svc", "-a", "acct", "-w", "VERSION TWO, LONGER"]).status, 0)
        XCTAssertEqual(FS.pread(fd, count: 100, offset: 4).bytes, Array("ion one".utf8), "the open keeps its version")
        XCTAssertEqual(FS.read(mnt + "/svc/acct").bytes, Array("VERSION TWO, LONGER".utf8), "a new open sees the new one")
    }
}
