import Glibc
import KeychainCore
import KeychainCrypto
@testable import KeychainFS
import XCTest

/// The root (`/`): class directories, then one directory per service.
final class RootDirectoryTests: NodeTestCase {
    let root = InodeTable.rootIno

    func testAttributesLookupAndListing() throws {
        try addPassword("db", "app", "s1")
        try vault.add(["class": "inet", "srvr": "host.example", "acct": "me"], secret: try SecureBytes(copying: [1]), accessGroups: ["default"])
        guard case .attr(let st)? = ask({ $0.getattr($1, ino: root) }) else { return XCTFail("getattr") }
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFDIR)
        XCTAssertEqual(st.st_mode & 0o777, 0o755)
        XCTAssertEqual(names(list(root)), [".internet", "db"], "a class directory holding something, then the services")
        XCTAssertTrue(mount.node(inode(".internet")) is ServerDirectory)
        XCTAssertTrue(mount.node(inode(".keys")) is FlatClassDirectory, "always there to enter, listed only when it holds a file")
        XCTAssertTrue(mount.node(inode("db")) is ServiceDirectory)
        XCTAssertEqual(errno { $0.lookup($1, parent: root, name: bytes("nosuch")) }, ENOENT)
        XCTAssertEqual(errno { $0.lookup($1, parent: root, name: bytes("%61pp")) }, ENOENT, "a name not in canonical form")
        XCTAssertEqual(list(root, uid: stranger).count, 0, "a caller entitled to no group sees no service")
    }

    func testMkdirRmdirAndTheClassDirectoriesStay() throws {
        XCTAssertEqual(errno { $0.mkdir($1, parent: root, name: bytes(".internet")) }, EEXIST)
        guard case .entry? = ask({ $0.mkdir($1, parent: root, name: bytes("fresh")) }) else { return XCTFail("mkdir") }
        XCTAssertEqual(errno { $0.mkdir($1, parent: root, name: bytes("fresh")) }, EEXIST)
        XCTAssertEqual(names(list(root)), ["fresh"], "an empty service lasts until unmount")
        try addPassword("full", "a", "x")
        XCTAssertEqual(errno { $0.rmdir($1, parent: root, name: bytes("full")) }, ENOTEMPTY)
        XCTAssertEqual(errno { $0.rmdir($1, parent: root, name: bytes(".keys")) }, EPERM)
        XCTAssertEqual(errno { $0.rmdir($1, parent: root, name: bytes("fresh")) }, 0)
        XCTAssertEqual(errno { $0.rmdir($1, parent: root, name: bytes("fresh")) }, ENOENT)
    }

    func testRenameOfAServiceMovesEveryItem() throws {
        try addPassword("old", "a", "1")
        try addPassword("old", "b", "2")
        XCTAssertEqual(errno { $0.rename($1, parent: root, name: bytes("old"), newParent: root, newName: bytes("new"), flags: 0) }, 0)
        XCTAssertEqual(try vault.fileEntries(service: bytes("new"), accessGroups: ["default"]).map(\.account), [bytes("a"), bytes("b")])
        XCTAssertTrue(try vault.fileEntries(service: bytes("old"), accessGroups: ["default"]).isEmpty)
        XCTAssertEqual(policy.events.withLock { $0.last }, "update new [\"default\"]")
        XCTAssertEqual(errno { $0.rename($1, parent: root, name: bytes("new"), newParent: root, newName: bytes(".keys"), flags: 0) }, EPERM)
        try addPassword("other", "c", "3")
        XCTAssertEqual(errno { $0.rename($1, parent: root, name: bytes("new"), newParent: root, newName: bytes("other"), flags: 1) }, EEXIST)
        XCTAssertEqual(errno { $0.rename($1, parent: root, name: bytes("new"), newParent: root, newName: bytes("other"), flags: 0) }, ENOTEMPTY)
        XCTAssertEqual(errno { $0.rename($1, parent: root, name: bytes("new"), newParent: self.inode(".internet"), newName: bytes("x"), flags: 0) }, EXDEV)
        XCTAssertEqual(errno { $0.rename($1, parent: root, name: bytes("new"), newParent: root, newName: bytes("x"), flags: 4) }, EINVAL,
                       "only RENAME_NOREPLACE")
    }

    func testWhatADirectoryDoesNotServe() {
        XCTAssertEqual(errno { $0.open($1, ino: root, opened: OpenInfo(flags: O_RDONLY)) }, EISDIR)
        XCTAssertEqual(errno { $0.create($1, parent: root, name: bytes("f"), opened: OpenInfo(flags: O_WRONLY | O_CREAT)) }, EPERM)
        XCTAssertEqual(errno { $0.unlink($1, parent: root, name: bytes("f")) }, ENOENT)
        var size = stat()
        size.st_size = 0
        XCTAssertEqual(errno { $0.setattr($1, ino: root, attr: size, toSet: 1 << 3, handle: nil) }, EISDIR)
        XCTAssertEqual(errno { $0.setattr($1, ino: root, attr: size, toSet: 1 << 0, handle: nil) }, EPERM, "chmod")
        XCTAssertEqual(errno { $0.getxattr($1, ino: root, name: "user.keychain.label", size: 0) }, ENODATA)
        XCTAssertEqual(errno { $0.getxattr($1, ino: root, name: "user.other", size: 0) }, ENODATA)
        // No security labels or POSIX ACLs anywhere in the mount: unsupported, not absent.
        XCTAssertEqual(errno { $0.getxattr($1, ino: root, name: "security.selinux", size: 0) }, EOPNOTSUPP)
        XCTAssertEqual(errno { $0.getxattr($1, ino: root, name: "system.posix_acl_default", size: 0) }, EOPNOTSUPP)
        XCTAssertEqual(errno { $0.setxattr($1, ino: root, name: "user.other", value: []) }, ENOTSUP)
        guard case .xattrSize(0)? = ask({ $0.listxattr($1, ino: root, size: 0) }) else { return XCTFail("listxattr") }
    }
}

/// `/.internet`: a directory per server.
final class ServerDirectoryTests: NodeTestCase {
    func testServersAreListedMadeAndRemoved() throws {
        try vault.add(["class": "inet", "srvr": "host.example", "acct": "me", "port": .number(8443)],
                      secret: try SecureBytes(copying: Array("pw".utf8)), accessGroups: ["default"])
        let internet = inode(".internet")
        XCTAssertEqual(names(list(internet)), ["host.example"])
        let server = inode("host.example", in: internet)
        XCTAssertEqual(names(list(server)), ["me%~port=8443"])
        XCTAssertEqual(contents(inode("me%~port=8443", in: server)), bytes("pw"))
        guard case .entry? = ask({ $0.mkdir($1, parent: internet, name: bytes("empty.example")) }) else { return XCTFail("mkdir") }
        XCTAssertEqual(names(list(internet)), ["host.example", "empty.example"])
        XCTAssertEqual(errno { $0.rmdir($1, parent: internet, name: bytes("host.example")) }, ENOTEMPTY)
        XCTAssertEqual(errno { $0.rmdir($1, parent: internet, name: bytes("empty.example")) }, 0)
        XCTAssertEqual(errno { $0.rename($1, parent: internet, name: bytes("host.example"), newParent: internet, newName: bytes("moved.example"), flags: 0) }, 0)
        XCTAssertEqual(names(list(internet)), ["moved.example"])
        XCTAssertEqual(errno { $0.create($1, parent: internet, name: bytes("f"), opened: OpenInfo(flags: O_WRONLY | O_CREAT)) }, EPERM)
    }
}

/// `/.keys` and `/.certificates`: read-only directories of PEM files.
final class FlatClassDirectoryTests: NodeTestCase {
    func testNothingChangesThere() {
        let keys = inode(".keys")
        guard case .attr(let st)? = ask({ $0.getattr($1, ino: keys) }) else { return XCTFail("getattr") }
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFDIR)
        XCTAssertEqual(names(list(keys)), [])
        XCTAssertEqual(errno { $0.lookup($1, parent: keys, name: bytes("none.pem")) }, ENOENT)
        XCTAssertEqual(errno { $0.lookup($1, parent: keys, name: bytes("none")) }, ENOENT, "not a PEM name")
        XCTAssertEqual(errno { $0.mkdir($1, parent: keys, name: bytes("d")) }, EPERM)
        XCTAssertEqual(errno { $0.rmdir($1, parent: keys, name: bytes("d")) }, ENOTDIR)
        XCTAssertEqual(errno { $0.unlink($1, parent: keys, name: bytes("k.pem")) }, EPERM)
        XCTAssertEqual(errno { $0.create($1, parent: keys, name: bytes("k.pem"), opened: OpenInfo(flags: O_WRONLY | O_CREAT)) }, EPERM)
        XCTAssertEqual(errno { $0.rename($1, parent: keys, name: bytes("k.pem"), newParent: keys, newName: bytes("l.pem"), flags: 0) }, EPERM)
        XCTAssertEqual(errno { $0.rename($1, parent: InodeTable.rootIno, name: bytes("s"), newParent: keys, newName: bytes("l.pem"), flags: 0) }, EPERM,
                       "nor into it")
        XCTAssertEqual(names(list(inode(".certificates"))), [])
    }

    /// Keys of one label each have a file: the first the plain name, the next its klbl too.
    func testKeysOfOneLabelAreAllListed() throws {
        for klbl: UInt8 in [1, 2] {
            try vault.add(["class": "keys", "kcls": 1, "type": 73, "klbl": .data([klbl]), "extr": true, "labl": "tls"],
                          secret: try SecureBytes(copying: Array("key \(klbl)".utf8)), accessGroups: ["default"])
        }
        let keys = inode(".keys")
        XCTAssertEqual(names(list(keys)), ["tls.pem", "tls%~klbl=02.pem"])
        XCTAssertNotEqual(inode("tls.pem", in: keys), inode("tls%~klbl=02.pem", in: keys))
        XCTAssertEqual(errno { $0.lookup($1, parent: keys, name: bytes("tls%~klbl=03.pem")) }, ENOENT)
    }
}

/// A service's directory: its items as files, made, renamed and removed there.
final class ServiceDirectoryTests: NodeTestCase {
    func testLookupAndListingCarryEachFilesAttributes() throws {
        try addPassword("db", "app", "secret!")
        try addPassword("db", "ops", "x", group: "team")
        let db = inode("db")
        guard case .attr? = ask({ $0.getattr($1, ino: db) }) else { return XCTFail("getattr") }
        let listed = list(db)
        XCTAssertEqual(names(listed), ["app", "ops"])
        XCTAssertEqual(listed.map { Int($0.attr.st_size) }, [7, 1])
        XCTAssertEqual(listed.map { $0.attr.st_mode & 0o7777 }, [0o600, 0o640], "modes from the groups")
        XCTAssertEqual(listed.map(\.timeout), [1, 1])
        guard case .entry(let ino, let attr, let timeout)? = ask({ $0.lookup($1, parent: db, name: bytes("app")) }) else { return XCTFail("lookup") }
        XCTAssertEqual(ino, listed[0].ino, "READDIRPLUS gave the same inode a lookup does")
        XCTAssertEqual(attr.st_size, 7)
        XCTAssertEqual(timeout, 1, "a file's name and attributes: 1 s")
        // A directory's are kept longer: they never change while mounted, and what makes a
        // directory go is told to the kernel.
        guard case .entry(_, _, let directoryTimeout)? = ask({ $0.lookup($1, parent: InodeTable.rootIno, name: bytes("db")) })
        else { return XCTFail("lookup of the directory") }
        XCTAssertEqual(directoryTimeout, 30)
        XCTAssertEqual(list(InodeTable.rootIno).filter { $0.name == bytes("db") }.map(\.timeout), [30], "the root's listing: the same")
        let plain = list(db, plus: false)
        XCTAssertEqual(plain.map { $0.attr.st_mode }, [S_IFREG, S_IFREG], "READDIR: the type only")
        XCTAssertEqual(errno { $0.lookup($1, parent: db, name: bytes("nosuch")) }, ENOENT)
        XCTAssertEqual(names(list(db, uid: stranger)), [], "a caller entitled to neither group")
    }

    /// Two items of one name in one group, one synchronizable: each has a file, and `rm` of the
    /// plain name takes the one it shows, not both.
    func testItemsOfOneNameInOneGroupSyncedAndNotBothHaveNames() throws {
        try addPassword("db", "app", "LOCAL")
        try addPassword("db", "app", "SYNCED", ["sync": 1])
        try addPassword("db", "app", "TEAM", group: "team", ["sync": 1])
        let db = inode("db")
        XCTAssertEqual(names(list(db)), ["app", "app%~agrp=default%~sync=1", "app%~agrp=team"])
        XCTAssertEqual(contents(inode("app", in: db)), bytes("LOCAL"))
        XCTAssertEqual(contents(inode("app%~agrp=default%~sync=1", in: db)), bytes("SYNCED"))
        XCTAssertEqual(contents(inode("app%~agrp=default%~sync=0", in: db)), bytes("LOCAL"))
        XCTAssertEqual(contents(inode("app%~sync=1", in: db)), bytes("SYNCED"), "the first synchronizable one")
        XCTAssertEqual(errno { $0.lookup($1, parent: db, name: bytes("app%~agrp=team%~sync=0")) }, ENOENT)
        XCTAssertEqual(errno { $0.lookup($1, parent: db, name: bytes("app%~sync=1%~agrp=team")) }, ENOENT, "not canonical")
        XCTAssertEqual(errno { $0.unlink($1, parent: db, name: bytes("app")) }, 0)
        let left = try vault.fileEntries(service: bytes("db"), accessGroups: ["default", "team"])
        XCTAssertEqual(left.map(\.group), ["default", "team"], "rm of the plain name took only the item it showed")
        XCTAssertEqual(names(list(db)), ["app", "app%~agrp=team"])
        XCTAssertEqual(contents(inode("app", in: db)), bytes("SYNCED"))
        // A rename keeps the synchronizable value: a target named with the other one is no name it can take.
        XCTAssertEqual(errno { $0.rename($1, parent: db, name: bytes("app"), newParent: db, newName: bytes("b%~sync=0"), flags: 0) }, EINVAL)
        XCTAssertEqual(errno { $0.rename($1, parent: db, name: bytes("app"), newParent: db, newName: bytes("b%~sync=1"), flags: 0) }, 0)
        XCTAssertEqual(try vault.fileEntries(service: bytes("db"), account: bytes("b"), accessGroups: ["default"]).first?
                        .attributes[.synchronizable]?.integerView, 1)
        // A new file named with a synchronizable value makes an item of that value.
        guard case .create(_, _, let opened)? = ask({ $0.create($1, parent: db, name: bytes("b%~agrp=default%~sync=0"),
                                                              opened: OpenInfo(flags: O_WRONLY | O_CREAT | O_EXCL)) })
        else { return XCTFail("create") }
        let data = bytes("NEW")
        guard case .written(3)? = ask({ m, r in data.withUnsafeBytes { m.write(r, data: $0, offset: 0, handle: opened.handle) } })
        else { return XCTFail("write") }
        XCTAssertEqual(errno { $0.release($1, handle: opened.handle) }, 0)
        let both = try vault.fileEntries(service: bytes("db"), account: bytes("b"), accessGroups: ["default"])
        XCTAssertEqual(both.map { $0.attributes[.synchronizable]?.integerView ?? 0 }.sorted(), [0, 1])
        XCTAssertEqual(names(list(db)), ["b", "app", "b%~agrp=default%~sync=0"], "the first of b keeps the plain name")
    }

    func testItemsOfOneNameInTwoGroupsBothHaveNames() throws {
        try addPassword("db", "app", "TEAM", group: "team")
        try addPassword("db", "app", "MINE")
        let db = inode("db")
        XCTAssertEqual(names(list(db)), ["app", "app%~agrp=default"])
        XCTAssertEqual(contents(inode("app", in: db)), bytes("TEAM"))
        XCTAssertEqual(contents(inode("app%~agrp=default", in: db)), bytes("MINE"))
        XCTAssertEqual(contents(inode("app%~agrp=team", in: db)), bytes("TEAM"))
        XCTAssertEqual(errno { $0.unlink($1, parent: db, name: bytes("app")) }, 0)
        XCTAssertEqual(try vault.fileEntries(service: bytes("db"), accessGroups: ["default", "team"]).map(\.group), ["default"],
                       "rm of the plain name took the item it showed")
    }

    func testCreateWriteAndCloseStoresOneItem() throws {
        let db = try makeService("db")
        guard case .create(let ino, _, let opened)? = ask({ $0.create($1, parent: db, name: bytes("new"), opened: OpenInfo(flags: O_WRONLY | O_CREAT | O_EXCL)) })
        else { return XCTFail("create") }
        XCTAssertTrue(try vault.fileEntries(service: bytes("db"), accessGroups: ["default"]).isEmpty, "nothing stored before the close")
        guard case .attr(let pending)? = ask({ $0.getattr($1, ino: ino) }) else { return XCTFail("getattr of a pending file") }
        XCTAssertEqual(pending.st_size, 0)
        let data = bytes("written")
        guard case .written(7)? = ask({ m, r in data.withUnsafeBytes { m.write(r, data: $0, offset: 0, handle: opened.handle) } })
        else { return XCTFail("write") }
        XCTAssertEqual(errno { $0.flush($1, handle: opened.handle) }, 0)
        XCTAssertEqual(errno { $0.release($1, handle: opened.handle) }, 0)
        XCTAssertEqual(try vault.password(service: "db", account: "new", groups: ["default"]), "written")
        XCTAssertEqual(policy.events.withLock { $0.filter { !$0.hasPrefix("audit") } }, ["add db/new [\"default\"]"])
        XCTAssertEqual(errno { $0.create($1, parent: db, name: bytes("new"), opened: OpenInfo(flags: O_WRONLY | O_CREAT | O_EXCL)) }, EEXIST)
        XCTAssertEqual(errno(uid: stranger) { $0.create($1, parent: db, name: bytes("other"), opened: OpenInfo(flags: O_WRONLY | O_CREAT)) }, EACCES)
    }

    func testRenameMovesAnItemAndAnEditorsSaveReplacesItsTarget() throws {
        try addPassword("db", "a", "A")
        try addPassword("db", "b", "B")
        try addPassword("web", "c", "C")
        let db = inode("db"), web = inode("web")
        XCTAssertEqual(errno { $0.rename($1, parent: db, name: bytes("a"), newParent: web, newName: bytes("a2"), flags: 0) }, 0)
        XCTAssertEqual(try vault.password(service: "web", account: "a2", groups: ["default"]), "A")
        XCTAssertEqual(errno { $0.rename($1, parent: web, name: bytes("c"), newParent: db, newName: bytes("b"), flags: 1) }, EEXIST)
        XCTAssertEqual(errno { $0.rename($1, parent: web, name: bytes("c"), newParent: db, newName: bytes("b"), flags: 0) }, 0)
        XCTAssertEqual(try vault.password(service: "db", account: "b", groups: ["default"]), "C", "the target took the source's secret")
        XCTAssertEqual(names(list(web)), ["a2"])
        XCTAssertEqual(errno { $0.rename($1, parent: db, name: bytes("nosuch"), newParent: db, newName: bytes("x"), flags: 0) }, ENOENT)
        XCTAssertEqual(errno { $0.rename($1, parent: db, name: bytes("b"), newParent: InodeTable.rootIno, newName: bytes("x"), flags: 0) }, EXDEV)
    }

    func testUnlinkAndWhatAServiceDoesNotServe() throws {
        try addPassword("db", "app", "x")
        let db = inode("db")
        XCTAssertEqual(errno(uid: stranger) { $0.unlink($1, parent: db, name: bytes("app")) }, ENOENT, "not the stranger's to remove")
        XCTAssertEqual(errno { $0.unlink($1, parent: db, name: bytes("app")) }, 0)
        XCTAssertEqual(errno { $0.unlink($1, parent: db, name: bytes("app")) }, ENOENT)
        XCTAssertEqual(errno { $0.getattr($1, ino: db) }, ENOENT, "an empty service is gone")
        XCTAssertEqual(errno { $0.mkdir($1, parent: db, name: bytes("sub")) }, EPERM)
        XCTAssertEqual(errno { $0.open($1, ino: db, opened: OpenInfo(flags: O_RDONLY)) }, EISDIR)
    }

    private func makeService(_ name: String) throws -> UInt64 {
        guard case .entry(let ino, _, _)? = ask({ $0.mkdir($1, parent: InodeTable.rootIno, name: self.bytes(name)) }) else {
            XCTFail("mkdir \(name)")
            return 0
        }
        return ino
    }
}

/// An item's file: its secret read at open, its size cut, its attributes as xattrs.
final class ItemFileTests: NodeTestCase {
    func testReadTruncateAndTheCallerItShowsTo() throws {
        try addPassword("db", "app", "0123456789")
        let db = inode("db"), app = inode("app", in: db)
        guard case .attr(let st)? = ask({ $0.getattr($1, ino: app) }) else { return XCTFail("getattr") }
        XCTAssertEqual(st.st_size, 10)
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFREG)
        XCTAssertEqual(contents(app), bytes("0123456789"))
        guard case .open(let o)? = open(app) else { return XCTFail("open") }
        XCTAssertTrue(o.directIO && o.noFlush, "direct I/O by default, no FLUSH for a reader")
        guard case .buffer(let tail)? = ask({ $0.read($1, size: 4, offset: 8, handle: o.handle) }) else { return XCTFail("read") }
        XCTAssertEqual(tail, bytes("89"))
        XCTAssertEqual(errno { $0.release($1, handle: o.handle) }, 0)
        XCTAssertEqual(errno { $0.read($1, size: 4, offset: 0, handle: o.handle) }, EBADF, "released")
        XCTAssertEqual(open(app, uid: stranger)?.errno, EACCES, "visible to the mount, not to this caller")
        XCTAssertTrue(policy.events.withLock { $0.contains("audit fileDenied") })

        var size = stat()
        size.st_size = 4
        guard case .attr(let cut)? = ask({ $0.setattr($1, ino: app, attr: size, toSet: 1 << 3, handle: nil) }) else { return XCTFail("truncate") }
        XCTAssertEqual(cut.st_size, 4)
        XCTAssertEqual(try vault.password(service: "db", account: "app", groups: ["default"]), "0123")
        size.st_size = off_t(ItemLimits.maximumSecretLength + 1)
        XCTAssertEqual(errno { $0.setattr($1, ino: app, attr: size, toSet: 1 << 3, handle: nil) }, EFBIG)
        XCTAssertEqual(errno { $0.lookup($1, parent: app, name: bytes("x")) }, ENOTDIR)
        XCTAssertEqual(errno { $0.opendir($1, ino: app, opened: OpenInfo(flags: O_RDONLY)) }, ENOTDIR)
    }

    func testWritingThroughADescriptorStoresAtTheClose() throws {
        try addPassword("db", "app", "old")
        let app = inode("app", in: inode("db"))
        guard case .open(let o)? = open(app, O_WRONLY | O_TRUNC) else { return XCTFail("open for writing") }
        XCTAssertFalse(o.noFlush, "a writer's close stores")
        var data = bytes("new secret")
        guard case .written(10)? = ask({ m, r in data.withUnsafeBytes { m.write(r, data: $0, offset: 0, handle: o.handle) } }) else { return XCTFail("write") }
        XCTAssertEqual(try vault.password(service: "db", account: "app", groups: ["default"]), "old", "stored at the close, not before")
        XCTAssertEqual(errno { $0.release($1, handle: o.handle) }, 0)
        XCTAssertEqual(try vault.password(service: "db", account: "app", groups: ["default"]), "new secret")
        data = [0]
        XCTAssertEqual(errno { m, r in data.withUnsafeBytes { m.write(r, data: $0, offset: 0, handle: o.handle) } }, EBADF)
    }

    func testExtendedAttributes() throws {
        try addPassword("db", "app", "x", ["labl": "Database"])
        let app = inode("app", in: inode("db"))
        guard case .xattrSize(8)? = ask({ $0.getxattr($1, ino: app, name: "user.keychain.label", size: 0) }) else { return XCTFail("size") }
        guard case .buffer(let label)? = ask({ $0.getxattr($1, ino: app, name: "user.keychain.label", size: 64) }) else { return XCTFail("label") }
        XCTAssertEqual(label, bytes("Database"))
        XCTAssertEqual(errno { $0.getxattr($1, ino: app, name: "user.keychain.label", size: 2) }, ERANGE)
        XCTAssertEqual(errno { $0.getxattr($1, ino: app, name: "user.keychain.comment", size: 64) }, ENODATA)
        XCTAssertEqual(errno { $0.getxattr($1, ino: app, name: "user.other", size: 64) }, ENODATA)
        for name in ["security.selinux", "system.posix_acl_access", "trusted.x", "security.capability"] {
            XCTAssertEqual(errno { $0.getxattr($1, ino: app, name: name, size: 64) }, EOPNOTSUPP, name)
            XCTAssertEqual(errno { $0.setxattr($1, ino: app, name: name, value: []) }, EOPNOTSUPP, name)
            XCTAssertEqual(errno { $0.removexattr($1, name: name) }, EOPNOTSUPP, name)
        }
        XCTAssertEqual(errno { $0.getxattr($1, ino: self.inode("db"), name: "system.posix_acl_access", size: 0) }, EOPNOTSUPP)
        guard case .buffer(let list)? = ask({ $0.listxattr($1, ino: app, size: 4096) }) else { return XCTFail("list") }
        XCTAssertTrue(String(decoding: list, as: UTF8.self).split(separator: "\0").contains("user.keychain.access-group"))
        XCTAssertEqual(errno { $0.setxattr($1, ino: app, name: "user.keychain.comment", value: self.bytes("hello")) }, 0)
        XCTAssertEqual(try vault.fileEntries(service: bytes("db"), accessGroups: ["default"]).first?.attributes[.comment], .string("hello"))
        XCTAssertEqual(errno { $0.setxattr($1, ino: app, name: "user.keychain.created", value: self.bytes("x")) }, EPERM)
        XCTAssertEqual(errno { $0.setxattr($1, ino: app, name: "user.keychain.accessible", value: self.bytes("bogus")) }, EINVAL)
        XCTAssertEqual(errno { $0.removexattr($1, name: "user.keychain.label") }, EPERM)
    }

    /// A directory looked up once is known without a search, until something in it changes: it
    /// still goes with its last item, whether removed here or by another client (the daemon
    /// tells the mount), or hidden by a lock.
    func testADirectoryGoesWithItsLastItem() throws {
        try addPassword("db", "app", "x")
        try addPassword("web", "app", "x", ["pdmn": "ak"])  // readable only while unlocked
        try addPassword("ssh", "app", "x", ["pdmn": "ck"])  // readable after a first unlock
        for name in ["db", "web", "ssh"] { _ = inode(name) }
        XCTAssertEqual(errno { $0.unlink($1, parent: self.inode("db"), name: self.bytes("app")) }, 0)
        XCTAssertEqual(errno { $0.lookup($1, parent: InodeTable.rootIno, name: self.bytes("db")) }, ENOENT, "removed here")
        try addPassword("db", "app", "y")
        _ = inode("db")
        _ = try vault.delete(["class": "genp", "svce": "db"], accessGroups: ["default"])
        mount.invalidate(service: bytes("db"), account: bytes("app"))
        XCTAssertEqual(errno { $0.lookup($1, parent: InodeTable.rootIno, name: self.bytes("db")) }, ENOENT, "removed by another client")
        vault.lock()
        mount.vaultDidLock()
        XCTAssertEqual(errno { $0.lookup($1, parent: InodeTable.rootIno, name: self.bytes("web")) }, ENOENT, "hidden by the lock")
        _ = inode("ssh")
    }

    /// `rm` of a synchronizable item's plain name after it was read (its entry known) removes it.
    func testRemovingASynchronizableFileAfterReadingIt() throws {
        try addPassword("db", "app", "SYNCED", ["sync": 1])
        let db = inode("db")
        XCTAssertEqual(contents(inode("app", in: db)), bytes("SYNCED"))
        XCTAssertEqual(errno { $0.unlink($1, parent: db, name: self.bytes("app")) }, 0)
        XCTAssertEqual(try vault.fileEntries(service: bytes("db"), accessGroups: ["default"]).count, 0)
    }

    func testALockRevokesOpenDescriptorsAndHidesTheFile() throws {
        try addPassword("db", "app", "x")
        let app = inode("app", in: inode("db"))
        guard case .open(let o)? = open(app) else { return XCTFail("open") }
        vault.lock()
        mount.vaultDidLock()
        XCTAssertEqual(errno { $0.read($1, size: 10, offset: 0, handle: o.handle) }, EACCES)
        guard case .attr? = ask({ $0.getattr($1, ino: app) }) else { return XCTFail("fstat on a revoked descriptor still answers") }
        XCTAssertEqual(errno { $0.release($1, handle: o.handle) }, 0)
        XCTAssertEqual(errno { $0.getattr($1, ino: app) }, ENOENT, "gone once nothing holds it")
    }
}

/// What holds for every node kind: a read-only mount, and an inode the mount does not know.
final class MountWideRuleTests: NodeTestCase {
    func testAReadOnlyMountChangesNothing() throws {
        try addPassword("db", "app", "x")
        let ro = try makeMount("ro")
        let db = ask(on: ro, { $0.lookup($1, parent: InodeTable.rootIno, name: self.bytes("db")) })
        guard case .entry(let dbIno, _, _)? = db, case .entry(let app, _, _)? = ask(on: ro, { $0.lookup($1, parent: dbIno, name: self.bytes("app")) })
        else { return XCTFail("lookup") }
        XCTAssertEqual(errno(on: ro) { $0.mkdir($1, parent: InodeTable.rootIno, name: self.bytes("n")) }, EROFS)
        XCTAssertEqual(errno(on: ro) { $0.rmdir($1, parent: InodeTable.rootIno, name: self.bytes("db")) }, EROFS)
        XCTAssertEqual(errno(on: ro) { $0.create($1, parent: dbIno, name: self.bytes("n"), opened: OpenInfo(flags: O_WRONLY | O_CREAT)) }, EROFS)
        XCTAssertEqual(errno(on: ro) { $0.unlink($1, parent: dbIno, name: self.bytes("app")) }, EROFS)
        XCTAssertEqual(errno(on: ro) { $0.rename($1, parent: dbIno, name: self.bytes("app"), newParent: dbIno, newName: self.bytes("b"), flags: 0) }, EROFS)
        XCTAssertEqual(errno(on: ro) { $0.setxattr($1, ino: app, name: "user.keychain.label", value: []) }, EROFS)
        XCTAssertEqual(errno(on: ro) { $0.open($1, ino: app, opened: OpenInfo(flags: O_RDWR)) }, EROFS)
        guard case .attr(let st)? = ask(on: ro, { $0.getattr($1, ino: app) }) else { return XCTFail("getattr") }
        XCTAssertEqual(st.st_mode & 0o222, 0, "no write bits on a read-only mount")
    }

    func testAnUnknownInode() {
        let gone: UInt64 = 9_999
        XCTAssertTrue(mount.node(gone) is MissingNode)
        XCTAssertEqual(errno { $0.getattr($1, ino: gone) }, ENOENT)
        XCTAssertEqual(errno { $0.lookup($1, parent: gone, name: self.bytes("x")) }, ENOENT)
        XCTAssertEqual(errno { $0.listxattr($1, ino: gone, size: 0) }, ENOENT)
        XCTAssertEqual(errno { $0.getxattr($1, ino: gone, name: "user.keychain.label", size: 0) }, ENOENT)
        XCTAssertEqual(errno { $0.open($1, ino: gone, opened: OpenInfo(flags: O_RDONLY)) }, EISDIR)
        XCTAssertEqual(errno { $0.read($1, size: 1, offset: 0, handle: 77) }, EBADF)
        XCTAssertEqual(errno { $0.readdir($1, size: 4096, offset: 0, handle: 77) }, EBADF)
    }
}
