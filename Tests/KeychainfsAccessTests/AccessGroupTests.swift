import KeychainModel
@testable import KeychainfsAccess
import XCTest

/// Access groups as Unix owner, group and mode: who is entitled to read and to write, by the
/// same rule the kernel applies to the group's files, and the records the vault keeps.
final class AccessGroupTests: XCTestCase {
    let owner: UInt32 = 1000, gid: UInt32 = 2000
    func caller(_ uid: UInt32, groups: Set<UInt32> = [], exe: String? = "/usr/bin/app") -> CallerIdentity {
        CallerIdentity(pid: 1, uid: uid, gid: groups.first ?? uid, groups: groups, executable: exe)
    }

    func testModeBitsDecideReadingAndWritingAsTheKernelDoes() {
        let root = caller(0), own = caller(owner), member = caller(3000, groups: [gid]), other = caller(4000, groups: [5])
        // mode: (root, owner, member, other) may read / may write
        let table: [(UInt32, [Bool], [Bool])] = [
            (0o400, [true, true, false, false], [true, true, false, false]),
            (0o000, [true, true, false, false], [true, true, false, false]),
            (0o440, [true, true, true, false], [true, true, false, false]),
            (0o460, [true, true, true, false], [true, true, true, false]),
            // Write bits without read bits grant nothing: writing needs entitlement first.
            (0o420, [true, true, false, false], [true, true, false, false]),
            (0o404, [true, true, true, true], [true, true, false, false]),
            (0o406, [true, true, true, true], [true, true, true, true]),
            (0o444, [true, true, true, true], [true, true, false, false]),
        ]
        for (mode, reads, writes) in table {
            let g = AccessGroup(name: "team", owner: owner, gid: gid, mode: mode)
            XCTAssertEqual([root, own, member, other].map(g.entitles), reads, "reading with mode \(String(mode, radix: 8))")
            XCTAssertEqual([root, own, member, other].map(g.entitlesWriting), writes, "writing with mode \(String(mode, radix: 8))")
        }
    }

    func testAnExecutableListRestrictsEveryoneRootIncluded() {
        let g = AccessGroup(name: "tools", owner: owner, gid: gid, mode: 0o444, executables: ["/bin/cat"])
        XCTAssertTrue(g.entitles(caller(4000, exe: "/bin/cat")))
        XCTAssertFalse(g.entitles(caller(4000, exe: "/bin/sh")))
        XCTAssertFalse(g.entitles(caller(0, exe: "/bin/sh")), "root runs another program")
        XCTAssertFalse(g.entitles(caller(owner, exe: nil)), "an executable that cannot be read")
        XCTAssertFalse(g.entitlesWriting(caller(owner, exe: "/bin/sh")))
        XCTAssertTrue(g.entitlesWriting(caller(owner, exe: "/bin/cat")))
    }

    func testRecordsRoundTripAndOlderRecordsReadWithoutGrants() throws {
        var g = AccessGroup(name: "team", owner: owner, gid: gid, mode: 0o440, executables: ["/bin/cat", "/usr/bin/psql"],
                            grantsLock: true)
        g.grantsAudit = true
        XCTAssertEqual(g.record["exe"], .string("/bin/cat\n/usr/bin/psql"))
        XCTAssertEqual(g.record["audit"], .number(1))
        XCTAssertEqual(AccessGroup(record: g.record), g)
        let plain = AccessGroup(name: "d", owner: 0, gid: 0)
        XCTAssertEqual(plain.mode, 0o400, "the default mode")
        XCTAssertNil(plain.record["audit"], "written only when granted")
        XCTAssertEqual(AccessGroup(record: plain.record), plain)
        // A record from before the lock and audit grants.
        let old: Fields = ["name": "old", "owner": .number(5), "gid": .number(6), "mode": .number(0o440)]
        let read = try XCTUnwrap(AccessGroup(record: old))
        XCTAssertEqual(read, AccessGroup(name: "old", owner: 5, gid: 6, mode: 0o440))
        XCTAssertFalse(read.grantsLock)
        XCTAssertFalse(read.grantsAudit)
        XCTAssertNil(AccessGroup(record: ["owner": .number(5), "gid": .number(6), "mode": .number(0o440)]), "no name")
        XCTAssertNil(AccessGroup(record: ["name": "x", "owner": "5", "gid": .number(6), "mode": .number(0o440)]), "a string owner")
    }

    func testTheTableKeepsCreationOrderAndGrants() throws {
        var locker = AccessGroup(name: "ops", owner: 0, gid: gid, mode: 0o440, grantsLock: true)
        locker.grantsAudit = true
        let table = AccessGroupTable(groups: [AccessGroup(name: "default", owner: 0, gid: 0),
                                              AccessGroup(name: "team", owner: owner, gid: gid, mode: 0o460),
                                              locker,
                                              AccessGroup(name: "public", owner: 0, gid: 0, mode: 0o444)])
        let member = caller(3000, groups: [gid]), other = caller(4000)
        XCTAssertEqual(table.entitled(member), ["team", "ops", "public"], "creation order: the first is the default for adds")
        XCTAssertEqual(table.writable(member), ["team"])
        XCTAssertEqual(table.entitled(other), ["public"])
        XCTAssertEqual(table.writable(other), [])
        XCTAssertEqual(table.entitled(caller(owner)), ["team", "public"])
        XCTAssertTrue(table.grantsLock(to: member))
        XCTAssertTrue(table.grantsAudit(to: member))
        XCTAssertFalse(table.grantsLock(to: other))
        XCTAssertFalse(table.grantsAudit(to: other))
        XCTAssertEqual(table.group(named: "team")?.mode, 0o460)
        XCTAssertNil(table.group(named: "nobody"))

        // The sealed setting's bytes: a u16 count, then each record.
        let encoded = try table.encoded()
        XCTAssertEqual(Array(encoded.prefix(2)), [0, 4])
        let back = try encoded.withUnsafeBytes { buf -> [AccessGroup] in
            var r = ByteReader(buf)
            _ = try r.u16()
            return try (0..<4).map { _ in try XCTUnwrap(AccessGroup(record: try AttributeCoding.readFields(from: &r))) }
        }
        XCTAssertEqual(back, table.groups)
        XCTAssertEqual(try encoded.withUnsafeBytes { try AccessGroupTable(encoded: $0) }.groups, table.groups)
    }

    func testStoredBytesThatDoNotReadAsATableAreDecodeErrors() throws {
        let encoded = try AccessGroupTable(groups: [AccessGroup(name: "team", owner: owner, gid: gid)]).encoded()
        for cut in [0, 1, 2, encoded.count - 1] {
            XCTAssertThrowsError(try Array(encoded.prefix(cut)).withUnsafeBytes { try AccessGroupTable(encoded: $0) }, "cut at \(cut)") {
                XCTAssertEqual($0 as? KeychainStatus, .decode)
            }
        }
        // A whole record that is not a group (no name).
        var w = ByteWriter()
        w.u16(1)
        AttributeCoding.write(["owner": .number(5)] as Fields, into: &w)
        XCTAssertThrowsError(try w.bytes.withUnsafeBytes { try AccessGroupTable(encoded: $0) }) {
            XCTAssertEqual($0 as? KeychainStatus, .decode)
        }
        XCTAssertEqual(try [0, 0].withUnsafeBytes { try AccessGroupTable(encoded: $0) }.groups, [], "no groups")
    }

    func testATableTooLargeForItsCountIsRefusedNotCut() {
        let many = AccessGroupTable(groups: Array(repeating: AccessGroup(name: "g", owner: 0, gid: 0), count: 65_536))
        XCTAssertThrowsError(try many.encoded()) { XCTAssertEqual($0 as? KeychainStatus, .param) }
    }
}
