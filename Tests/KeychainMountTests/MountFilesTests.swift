import Foundation
import KeychainTestSupport
import XCTest

/// What `ls -l`, `stat`, `cat` and `getfattr -d` show on a mounted vault (PRODUCT 6, issue 5).
final class MountFilesTests: MountTestCase {
    /// A secret with a newline, a NUL and UTF-8 (é, ✓, ☃) inside.
    let binary: [UInt8] = Array("top\nsecret".utf8) + [0] + Array("é✓ ☃".utf8)
    /// A secret that ends with a newline.
    let trailing: [UInt8] = Array("ends with a newline\n".utf8)

    func addFixtureItems() throws {
        try add("web", "alice", "hunter2", ["-l", "Alice at web", "-j", "a comment"])
        try add("web", "binary", bytes: binary)
        try add("web", "trailing", bytes: trailing)
        try add("db", "admin", "s3cr3t", ["--accessible", "AfterFirstUnlock"])
    }

    func testLayoutModesOwnersAndSizes() throws {
        try addFixtureItems()
        let mnt = try mount()

        // The top level lists exactly the services, each a directory owned by the daemon's user.
        XCTAssertEqual(FS.list(mnt).names?.sorted(), ["db", "web"])
        for path in [mnt, mnt + "/web", mnt + "/db"] {
            let (st, e) = FS.stat(path)
            assertErrno(e, 0, "stat \(path)")
            guard let st else { continue }
            XCTAssertEqual(st.st_mode & S_IFMT, S_IFDIR, path)
            XCTAssertEqual(st.st_mode & 0o7777, 0o755, path)
            XCTAssertEqual(st.st_uid, 0, path)
            XCTAssertEqual(st.st_gid, 0, path)
        }
        // Each service lists exactly its accounts.
        XCTAssertEqual(FS.list(mnt + "/web").names?.sorted(), ["alice", "binary", "trailing"])
        XCTAssertEqual(FS.list(mnt + "/db").names, ["admin"])

        // Files: regular, 0400, owned by root:root (the default group), size == secret length.
        let sizes = ["web/alice": 7, "web/binary": binary.count, "web/trailing": trailing.count, "db/admin": 6]
        for (path, size) in sizes {
            let (st, e) = FS.stat(mnt + "/" + path)
            assertErrno(e, 0, "stat \(path)")
            guard let st else { continue }
            XCTAssertEqual(st.st_mode & S_IFMT, S_IFREG, path)
            XCTAssertEqual(st.st_mode & 0o7777, 0o400, path)
            XCTAssertEqual(st.st_uid, 0, path)
            XCTAssertEqual(st.st_gid, 0, path)
            XCTAssertEqual(Int(st.st_size), size, path)
            XCTAssertEqual(st.st_nlink, 1, path)
        }
        // Modification time is the item's, not zero and not in the future.
        if let st = FS.stat(mnt + "/web/alice").st {
            XCTAssertGreaterThan(Int(st.st_mtim.tv_sec), Int(time(nil)) - 120)
            XCTAssertLessThanOrEqual(Int(st.st_mtim.tv_sec), Int(time(nil)) + 1)
        }

        // Missing names.
        assertErrno(FS.stat(mnt + "/web/nobody").errno, ENOENT, "stat of a missing account")
        assertErrno(FS.stat(mnt + "/nosuchservice").errno, ENOENT, "stat of a missing service")
        assertErrno(FS.read(mnt + "/web/nobody").errno, ENOENT, "open of a missing account")
        assertErrno(FS.list(mnt + "/nosuchservice").errno, ENOENT, "opendir of a missing service")
        assertErrno(FS.list(mnt + "/web/alice").errno, ENOTDIR, "opendir of a file")
    }

    func testReadsReturnExactBytes() throws {
        try addFixtureItems()
        let mnt = try mount()
        XCTAssertEqual(FS.read(mnt + "/web/alice").bytes, Array("hunter2".utf8))
        XCTAssertEqual(FS.read(mnt + "/web/binary").bytes, binary, "newline, NUL and UTF-8 survive")
        XCTAssertEqual(FS.read(mnt + "/web/trailing").bytes, trailing, "the trailing newline is part of the secret")
        XCTAssertEqual(FS.read(mnt + "/db/admin").bytes, Array("s3cr3t".utf8))

        // Small reads and reads at an offset see the same bytes.
        let fd = open(mnt + "/web/binary", O_RDONLY)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        XCTAssertEqual(FS.readAll(fd, chunk: 3).bytes, binary)
        XCTAssertEqual(FS.pread(fd, count: 4, offset: 4).bytes, Array(binary[4..<8]))
        XCTAssertEqual(FS.pread(fd, count: 100, offset: binary.count - 2).bytes, Array(binary.suffix(2)))
        XCTAssertEqual(FS.pread(fd, count: 10, offset: binary.count + 5).bytes, [], "past the end is EOF")

        // The bytes the CLI reads are the bytes the mount reads.
        XCTAssertEqual(try secret("web", "alice"), "hunter2")

        // Writing to a read-only descriptor is refused by the kernel.
        var b: UInt8 = 0x41
        XCTAssertEqual(Glibc.write(fd, &b, 1), -1)
        assertErrno(errno, EBADF, "write on O_RDONLY")
    }

    func testExtendedAttributes() throws {
        try addFixtureItems()
        let mnt = try mount()
        let alice = mnt + "/web/alice"
        XCTAssertEqual(FS.xattr(alice, "user.keychain.label"), "Alice at web")
        XCTAssertEqual(FS.xattr(alice, "user.keychain.comment"), "a comment")
        XCTAssertEqual(FS.xattr(alice, "user.keychain.accessible"), "ak")
        XCTAssertEqual(FS.xattr(alice, "user.keychain.access-group"), "default")
        XCTAssertEqual(FS.xattr(alice, "user.keychain.class"), "genp")
        XCTAssertEqual(FS.xattr(alice, "user.keychain.version"), "1")
        XCTAssertEqual(FS.xattr(alice, "user.keychain.synchronizable"), "0")
        XCTAssertEqual(FS.xattr(mnt + "/db/admin", "user.keychain.accessible"), "ck")
        // Dates are ISO 8601 in UTC, the same second as the file's times.
        if let st = FS.stat(alice).st {
            let formatter = ISO8601DateFormatter()
            formatter.timeZone = TimeZone(identifier: "UTC")
            let mtime = formatter.string(from: Date(timeIntervalSince1970: Double(st.st_mtim.tv_sec)))
            XCTAssertEqual(FS.xattr(alice, "user.keychain.created"), mtime)
            XCTAssertEqual(FS.xattr(alice, "user.keychain.modified"), mtime)
        } else {
            XCTFail("cannot stat \(alice)")
        }

        // getfattr -d lists exactly the attributes that have values (no description here).
        let names = FS.listxattr(alice)
        assertErrno(names.errno, 0, "listxattr")
        XCTAssertEqual(Set(names.names ?? []), Set(["class", "accessible", "access-group", "label", "comment", "created",
                                                    "modified", "synchronizable", "version"].map { "user.keychain." + $0 }))
        // Added without -l: labelled with its service, as security does.
        XCTAssertEqual(Set(FS.listxattr(mnt + "/web/binary").names ?? []),
                       Set(["class", "accessible", "access-group", "label", "created", "modified", "synchronizable", "version"]
                           .map { "user.keychain." + $0 }))
        XCTAssertEqual(FS.xattr(mnt + "/web/binary", "user.keychain.label"), "web")
        // Absent and unknown attributes.
        assertErrno(FS.getxattr(mnt + "/web/binary", "user.keychain.comment").errno, ENODATA, "absent comment")
        assertErrno(FS.getxattr(alice, "user.keychain.nosuch").errno, ENODATA, "unknown attribute")
        assertErrno(FS.getxattr(alice, "user.other").errno, ENODATA, "other namespace")
        assertErrno(FS.getxattr(mnt + "/web/nobody", "user.keychain.label").errno, ENOENT, "missing file")

        // An update through the CLI moves the version.
        let u = try h.run(["add-generic-password", "-U", "-s", "web", "-a", "alice", "-w", "hunter3"])
        XCTAssertEqual(u.status, 0, "\(u)")
        XCTAssertEqual(FS.xattr(alice, "user.keychain.version"), "2")
        XCTAssertEqual(FS.xattr(alice, "user.keychain.label"), "Alice at web")

        // The label is writable through setxattr and the CLI sees it; class is not.
        assertErrno(FS.setxattr(alice, "user.keychain.label", "Renamed label"), 0, "setxattr label")
        XCTAssertEqual(try attributes("web", "alice")["labl"] as? String, "Renamed label")
        XCTAssertEqual(FS.xattr(alice, "user.keychain.label"), "Renamed label")
        assertErrno(FS.setxattr(alice, "user.keychain.class", "inet"), EPERM, "setxattr class")
    }

    func testNamesThatCannotBeFileNamesAreEscaped() throws {
        try add("team/prod", "..", "dots")
        try add("50%", "a/b", "slash")
        try add(".hidden", ".", "dot")
        let mnt = try mount()
        XCTAssertEqual(FS.list(mnt).names?.sorted(), ["%2Ehidden", "50%25", "team%2Fprod"])
        XCTAssertEqual(FS.list(mnt + "/team%2Fprod").names, ["%2E."])
        XCTAssertEqual(FS.list(mnt + "/50%25").names, ["a%2Fb"])
        XCTAssertEqual(FS.list(mnt + "/%2Ehidden").names, ["%2E"])
        XCTAssertEqual(FS.read(mnt + "/team%2Fprod/%2E.").bytes, Array("dots".utf8))
        XCTAssertEqual(FS.read(mnt + "/50%25/a%2Fb").bytes, Array("slash".utf8))
        XCTAssertEqual(FS.read(mnt + "/%2Ehidden/%2E").bytes, Array("dot".utf8))
        // Only the canonical spelling names an item.
        assertErrno(FS.stat(mnt + "/50%2525").errno, ENOENT, "a double escape")
        assertErrno(FS.stat(mnt + "/50%25/a%2fb").errno, ENOENT, "lower-case hex")
        // A file written under an escaped name lands under the unescaped value.
        assertErrno(FS.write(mnt + "/50%25/c%2Fd", "written"), 0, "write c%2Fd")
        XCTAssertEqual(try secret("50%", "c/d"), "written")
    }
}

/// A read-only mount (`-o ro`): reads work, every change gives EROFS.
final class MountReadOnlyTests: MountTestCase {
    func testReadOnlyMount() throws {
        try add("svc", "acct", "read me")
        let mnt = try mount("ro")
        XCTAssertTrue(MountTestCase.mountLine(mnt)?.split(separator: " ")[3].split(separator: ",").contains("ro") == true,
                      MountTestCase.mountLine(mnt) ?? "not mounted")
        XCTAssertEqual(FS.read(mnt + "/svc/acct").bytes, Array("read me".utf8))
        XCTAssertEqual(FS.stat(mnt + "/svc/acct").st.map { $0.st_mode & 0o7777 }, 0o400)

        assertErrno(FS.write(mnt + "/svc/acct", "changed"), EROFS, "echo > existing file")
        assertErrno(FS.write(mnt + "/svc/acct", Array("x".utf8), flags: O_WRONLY), EROFS, "open O_WRONLY")
        assertErrno(FS.write(mnt + "/svc/acct", Array("x".utf8), flags: O_RDWR), EROFS, "open O_RDWR")
        assertErrno(FS.write(mnt + "/svc/new", "new"), EROFS, "echo > new file")
        assertErrno(FS.check(unlink(mnt + "/svc/acct")), EROFS, "rm")
        assertErrno(FS.check(rename(mnt + "/svc/acct", mnt + "/svc/moved")), EROFS, "mv")
        assertErrno(FS.check(mkdir(mnt + "/newsvc", 0o755)), EROFS, "mkdir")
        assertErrno(FS.check(truncate(mnt + "/svc/acct", 2)), EROFS, "truncate")
        assertErrno(FS.setxattr(mnt + "/svc/acct", "user.keychain.label", "x"), EROFS, "setxattr")

        // Nothing changed.
        XCTAssertEqual(try secret("svc", "acct"), "read me")
        XCTAssertEqual(FS.list(mnt + "/svc").names, ["acct"])
        XCTAssertEqual(try find("svc", "new").status, 44)
    }
}
