import Glibc
import KeychainCore
import KeychainCrypto
@testable import KeychainFS
import XCTest

/// The errno each failure becomes at the file interface (docs/filesystem.md, "Errors").
final class ErrnoMappingTests: XCTestCase {
    func testStatusesBecomeTheirErrno() {
        struct Unknown: Error {}
        let table: [(Error, Int32)] = [
            (KeychainStatus.itemNotFound, ENOENT), (KeychainStatus.interactionNotAllowed, ENOENT),
            (KeychainStatus.noSuchKeychain, ENOENT), (KeychainStatus.missingEntitlement, EACCES),
            (KeychainStatus.authFailed, EACCES), (KeychainStatus.userCanceled, EACCES),
            (KeychainStatus.duplicateItem, EEXIST), (KeychainStatus.param, EINVAL), (KeychainStatus.noSuchAttr, EINVAL),
            (KeychainStatus.readOnly, EROFS), (KeychainStatus.diskFull, ENOSPC), (KeychainStatus.decode, EIO),
            (KeychainStatus.io, EIO), (KeychainStatus.allocate, ENOMEM), (CryptoError.allocationFailed, ENOMEM),
            (Denied(), EACCES), (VaultFileError.missing, ENOENT), (VaultFileError.notAVault, EIO),
            (MountOptionError(option: "x"), EINVAL), (Unknown(), EIO),
        ]
        for (error, expected) in table {
            XCTAssertEqual(errnoFor(error), expected, "\(error)")
        }
    }
}

/// `-o` option lists as mount(8) and fstab pass them.
final class MountOptionsTests: XCTestCase {
    func testOptionsParseAndPrintBack() throws {
        let o = try MountOptions(parsing: "allow_other,ro,kernel_cache,groups=team:ops,map_uid=1000,map_gid=1001,mode=0440,on_change=echo x")
        XCTAssertTrue(o.allowOther)
        XCTAssertTrue(o.readOnly)
        XCTAssertTrue(o.kernelCache)
        XCTAssertEqual(o.groups, ["team", "ops"])
        XCTAssertEqual(o.mapUID, 1000)
        XCTAssertEqual(o.mapGID, 1001)
        XCTAssertEqual(o.fileMode, 0o440)
        XCTAssertEqual(o.onChange, "echo x")
        XCTAssertEqual(o.description, "allow_other,ro,kernel_cache,groups=team:ops,map_uid=1000,map_gid=1001,mode=0440")
        XCTAssertEqual(try MountOptions(parsing: o.description).description, o.description)
        XCTAssertEqual(try MountOptions(parsing: "").description, "rw")
        XCTAssertEqual(try MountOptions(parsing: "ro,rw,kernel_cache,direct_io"), MountOptions(), "the last one counts")
    }

    func testMountsOptionsThatChangeNothingAreAccepted() throws {
        XCTAssertEqual(try MountOptions(parsing: "defaults,nodev,nosuid,noexec,noatime,relatime,_netdev,default_permissions,auto,noauto,user,nouser,dev,suid,exec,,"),
                       MountOptions())
    }

    func testUnknownAndMalformedOptionsAreNamed() {
        for bad in ["uid=0", "groups=", "map_uid=-1", "map_uid=x", "map_gid=", "mode=0800", "mode=9", "on_change=", "RO"] {
            XCTAssertThrowsError(try MountOptions(parsing: "rw," + bad + ",ro"), bad) { error in
                XCTAssertEqual((error as? MountOptionError)?.option, bad)
                XCTAssertEqual(KeychainStatus(known: error), .param)
            }
        }
    }
}

/// An open file's contents as one state at a time (OpenFileContents), and the guarded memory
/// its writers may hold (WriteBudget).
final class OpenFileTests: XCTestCase {
    func file(_ budget: WriteBudget? = nil) -> OpenFile {
        let f = OpenFile(node: .item(ItemName(service: Array("db".utf8), account: Array("app".utf8))), ref: nil,
                         protection: .whenUnlocked, groups: ["default"])
        f.budget = budget
        f.writerUID = 1000
        return f
    }

    func contents(_ f: OpenFile) -> [UInt8] { f.withContents { Array($0) } }

    func write(_ f: OpenFile, _ bytes: [UInt8], at offset: Int) throws -> Bool? {
        try f.withWrite { w -> Bool in
            guard try f.reserve(offset + bytes.count, in: &w) else { return false }
            w.buffer.withUnsafeMutableBytes { b in for (i, x) in bytes.enumerated() { b[offset + i] = x } }
            w.length = max(w.length, offset + bytes.count)
            w.dirty = true
            w.writes += 1
            return true
        }
    }

    func testAReaderSeesItsSnapshotAndAWriterItsCopy() throws {
        let f = file()
        XCTAssertEqual(contents(f), [], "nothing decrypted yet")
        XCTAssertFalse(f.isWriting)
        f.setSnapshot(try SecureBytes(copying: Array("old".utf8)))
        XCTAssertEqual(contents(f), Array("old".utf8))
        XCTAssertEqual(f.writtenLength, 0, "a reader has written nothing")
        XCTAssertNil(try write(f, [1], at: 0), "a reader does not write")

        XCTAssertTrue(try f.startWriting())
        XCTAssertTrue(f.isWriting)
        XCTAssertEqual(contents(f), Array("old".utf8), "a writer starts from what it read")
        XCTAssertEqual(f.withWrite { $0.pending }, false, "nothing to store until it writes")
        XCTAssertEqual(try write(f, Array("new!".utf8), at: 0), true)
        XCTAssertEqual(contents(f), Array("new!".utf8))
        XCTAssertEqual(f.writtenLength, 4)
        XCTAssertEqual(f.withWrite { $0.dirty }, true)
        // Past the buffer: it grows and keeps the bytes.
        XCTAssertEqual(try write(f, [0x7a], at: 100_000), true)
        XCTAssertEqual(f.writtenLength, 100_001)
        XCTAssertEqual(Array(contents(f).prefix(4)), Array("new!".utf8))
        XCTAssertEqual(contents(f).last, 0x7a)
    }

    func testACreateIsPendingWithNothingWritten() throws {
        let f = file()
        XCTAssertTrue(try f.startWriting())
        XCTAssertEqual(f.withWrite { $0.pending }, true, "an O_TRUNC open or a create stores its emptying at the close")
        XCTAssertEqual(contents(f), [])
    }

    func testRevokedAbandonedAndClosedFilesHoldNothing() throws {
        let ends: [(String, (OpenFile) -> Void)] = [("revoke", { $0.revoke() }), ("abandon", { $0.abandon() }), ("wipe", { $0.wipe() })]
        for (name, end) in ends {
            let budget = WriteBudget(perUID: 1 << 20, total: 1 << 20)
            let f = file(budget)
            f.setSnapshot(try SecureBytes(copying: [1, 2, 3]))
            XCTAssertTrue(try f.startWriting())
            XCTAssertEqual(try write(f, [9], at: 0), true)
            end(f)
            XCTAssertFalse(f.isWriting, name)
            XCTAssertEqual(f.isRevoked, name == "revoke")
            XCTAssertEqual(contents(f), [], "\(name): it reads nothing")
            XCTAssertEqual(f.writtenLength, 0, name)
            XCTAssertNil(try write(f, [1], at: 0), "\(name): it writes nothing")
            // What it held is given back: the whole budget is free again.
            XCTAssertTrue(budget.charge(1 << 20, uid: 1000), "\(name) released its share")
        }
    }

    func testWritersAreBoundPerUIDAndInTotal() throws {
        let budget = WriteBudget(perUID: 1000, total: 1500)
        XCTAssertTrue(budget.charge(800, uid: 1))
        XCTAssertFalse(budget.charge(201, uid: 1), "past the uid's bound")
        XCTAssertTrue(budget.charge(200, uid: 1))
        XCTAssertFalse(budget.charge(501, uid: 2), "past the total")
        XCTAssertTrue(budget.charge(500, uid: 2))
        budget.release(1000, uid: 1)
        XCTAssertTrue(budget.charge(1000, uid: 3))
        XCTAssertEqual(WriteBudget.perUID, 2 * ItemLimits.maximumSecretLength)
        XCTAssertEqual(WriteBudget.total, 8 * ItemLimits.maximumSecretLength)

        // A file that would pass its uid's bound does not grow, and keeps what it had.
        let f = file(WriteBudget(perUID: 4096, total: 1 << 20))
        XCTAssertTrue(try f.startWriting())
        XCTAssertEqual(try write(f, Array(repeating: 1, count: 4000), at: 0), true)
        XCTAssertEqual(try write(f, [2], at: 5000), false)
        XCTAssertEqual(f.writtenLength, 4000)
        XCTAssertEqual(contents(f), Array(repeating: 1, count: 4000))
    }
}

/// Inode numbers and names of directories, as the kernel is given them.
final class InodeAndNameTests: XCTestCase {
    func testInodesStayWhileLookedUpAndGoWhenForgotten() {
        let table = InodeTable()
        XCTAssertEqual(table.node(InodeTable.rootIno), .root)
        let node = Node.service(.genericPassword, Array("db".utf8))
        let ino = table.lookedUp(node)
        XCTAssertNotEqual(ino, InodeTable.rootIno)
        XCTAssertEqual(table.lookedUp(node), ino, "one node, one number")
        XCTAssertEqual(table.existing(node), ino)
        table.forget(ino, 1)
        XCTAssertEqual(table.node(ino), node, "one lookup left")
        table.forget(ino, 1)
        XCTAssertNil(table.node(ino))
        XCTAssertNil(table.existing(node))
        XCTAssertNotEqual(table.lookedUp(node), ino, "a forgotten number names no other file")
        table.forget(InodeTable.rootIno, 100)
        XCTAssertEqual(table.node(InodeTable.rootIno), .root, "the root is never forgotten")
    }

    func testDirectoriesAreNamedByTheirEscapedValue() {
        for value in [".hidden", "a/b", "50%", "plain", ".", ".."] {
            let d = Directory(itemClass: .genericPassword, service: Array(value.utf8))
            XCTAssertFalse(d.fileName.contains(UInt8(ascii: "/")), value)
            XCTAssertNotEqual(d.fileName.first, UInt8(ascii: "."), "\(value): no service hides in the root")
            XCTAssertEqual(FileNames.unescape(d.fileName, topLevel: true), Array(value.utf8))
            XCTAssertEqual(Node.parent(of: d), .root)
            XCTAssertEqual(d.node, .service(.genericPassword, Array(value.utf8)))
        }
        let server = Directory(itemClass: .internetPassword, service: Array(".example.com".utf8))
        XCTAssertEqual(server.fileName, Array(".example.com".utf8), "a leading dot is kept under /.internet")
        XCTAssertEqual(Node.parent(of: server), .classRoot(.internetPassword))
        let keys = Directory(itemClass: .key, service: [])
        XCTAssertEqual(keys.node, .classRoot(.key))
        XCTAssertEqual(keys.fileName, FileNames.classDirectory(.key))
        XCTAssertEqual(Node.item(ItemName(service: Array("s".utf8), account: [])).directoryAttribute, .service)
        XCTAssertEqual(Node.service(.internetPassword, []).directoryAttribute, .server)
    }

    func testOnlyWellFormedHashedNamesAreLookedUp() {
        let hex = "0123456789ABCDEF0123456789ABCDEF"
        XCTAssertTrue(LongNames.isHashed(Array(("%H" + hex).utf8)))
        XCTAssertFalse(LongNames.isHashed(Array(("%H" + hex.lowercased()).utf8)), "upper-case digits only")
        XCTAssertFalse(LongNames.isHashed(Array(("%H" + hex.dropLast()).utf8)))
        XCTAssertFalse(LongNames.isHashed(Array(("%H" + hex + "0").utf8)))
        XCTAssertFalse(LongNames.isHashed(Array(("%h" + hex).utf8)))
        XCTAssertFalse(LongNames.isHashed(Array(("%H" + hex.dropLast() + "G").utf8)))
    }
}
