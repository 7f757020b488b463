import Foundation
import KeychainCore
import KeychainCrypto
import KeychainTestSupport
import XCTest

/// `ls -l` of a service is answered by READDIRPLUS: names with their attributes, each counted as
/// a lookup, so listing needs no lookup per name; the kernel's copies stay right through a cache
/// drop (FORGET), a change and a lock.
final class MountListingTests: MountTestCase {
    func testLongListingShowsEveryItemAndSurvivesForgetChangeAndLock() throws {
        let count = 120
        for i in 0..<count {
            try add("many", "acct\(i)", String(repeating: "x", count: i % 7 + 1), i % 2 == 0 ? [] : ["--accessible", "ck"])
        }
        let mnt = try mount()
        let dir = mnt + "/many"
        let listing = try runProgram(["/bin/ls", "-ln", dir])
        XCTAssertEqual(listing.status, 0, listing.description)
        let rows = listing.stdoutText.split(separator: "\n").dropFirst()  // "total N"
        XCTAssertEqual(rows.count, count)
        for row in rows {
            let f = row.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 9, let i = Int(f[8].dropFirst("acct".count)) else { return XCTFail("row \(row)") }
            XCTAssertEqual(String(f[0]), "-r--------", "mode of \(f[8])")
            XCTAssertEqual(String(f[2]), "0", "owner of \(f[8])")
            XCTAssertEqual(Int(f[4]), i % 7 + 1, "size of \(f[8])")
        }
        // The kernel drops what it holds (FORGET for every listed name); all still resolves.
        if FileManager.default.isWritableFile(atPath: "/proc/sys/vm/drop_caches") {
            try "2\n".write(toFile: "/proc/sys/vm/drop_caches", atomically: false, encoding: .utf8)
        }
        XCTAssertEqual(FS.read(dir + "/acct5").bytes, Array("xxxxxx".utf8))
        XCTAssertEqual(try runProgram(["/bin/ls", dir]).stdoutText.split(separator: "\n").count, count)
        // A change made through the CLI after the listing shows at once.
        XCTAssertEqual(try h.run(["delete-generic-password", "-s", "many", "-a", "acct3"]).status, 0)
        assertErrno(FS.stat(dir + "/acct3").errno, ENOENT, "a deleted item listed before")
        // Listed again, then locked: WhenUnlocked names are gone at once, AfterFirstUnlock ones stay.
        XCTAssertEqual(try runProgram(["/bin/ls", "-l", dir]).status, 0)
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        assertErrno(FS.stat(dir + "/acct0").errno, ENOENT, "a WhenUnlocked file listed before the lock")
        XCTAssertEqual(FS.stat(dir + "/acct1").st.map { Int($0.st_size) }, 2, "an AfterFirstUnlock file")
        let afterLock = try runProgram(["/bin/ls", dir]).stdoutText.split(separator: "\n")
        XCTAssertEqual(afterLock.count, count / 2 - 1, "the odd accounts but acct3")
    }

    /// Some time after a large listing is closed, the kernel is asked to drop the names it keeps
    /// from it (FUSE_NOTIFY_PRUNE), so the mount's table of them can shrink: a `stat` of a listed
    /// name, answered from the kernel's cache before, is looked up again after; every file still
    /// reads. Counted with bench/fuseops.sh (the kernel's fuse tracepoints).
    func testALargeListingsNamesLeaveTheKernelAfterItCloses() throws {
        try requireFuseTracepoints()
        let n = 4_300  // past Listing.large (4,096)
        try fill(services: ["big"], accounts: n)
        h.environment["KEYCHAINFS_PRUNE_SECONDS"] = "4"
        XCTAssertEqual(try h.run(["unlock-keychain"], input: passphrase + "\n").status, 0)
        let mnt = try mount("kernel_cache")  // names cached for 30 s: a lookup then means they were dropped
        let listing = try runProgram(["/bin/ls", "-l", mnt + "/big"])
        XCTAssertEqual(listing.stdoutText.split(separator: "\n").count, n + 1, "total, then every name")
        let names = (0..<50).map { mnt + "/big/acct\($0 * 80)" }
        XCTAssertEqual(try lookups(of: names, in: mnt), 0, "right after the listing the kernel knows every name")
        usleep(6_000_000)
        // Each name is looked up again (and perhaps the directory itself, whose entry may be revalidated).
        XCTAssertGreaterThanOrEqual(try lookups(of: names, in: mnt), names.count, "dropped after the listing closed")
        XCTAssertEqual(FS.read(mnt + "/big/acct4242").bytes, Array("secret 4242".utf8))
        XCTAssertEqual(try runProgram(["/bin/ls", mnt + "/big"]).stdoutText.split(separator: "\n").count, n)
    }

    /// Names that many small listings brought (none past Listing.large alone, more than it
    /// together) are dropped too, once no request named them for a whole sweep period.
    func testManySmallListingsNamesLeaveTheKernelOnceIdle() throws {
        try requireFuseTracepoints()
        let services = (0..<5).map { "s\($0)" }
        try fill(services: services, accounts: 900)  // 4,500 names in all
        h.environment["KEYCHAINFS_PRUNE_SECONDS"] = "4"
        XCTAssertEqual(try h.run(["unlock-keychain"], input: passphrase + "\n").status, 0)
        let mnt = try mount("kernel_cache")
        for s in services {
            XCTAssertEqual(try runProgram(["/bin/ls", "-l", mnt + "/" + s]).stdoutText.split(separator: "\n").count, 901)
        }
        let names = (0..<50).map { mnt + "/s4/acct\($0 * 17)" }
        XCTAssertEqual(try lookups(of: names, in: mnt), 0, "right after the listings the kernel knows every name")
        usleep(11_000_000)  // two sweeps and a margin: the first clears the marks, the second prunes
        XCTAssertGreaterThanOrEqual(try lookups(of: names, in: mnt), names.count, "dropped once idle")
        XCTAssertEqual(FS.read(mnt + "/s2/acct899").bytes, Array("secret 899".utf8))
    }

    /// The mount has no security labels and no POSIX ACLs, and says so (EOPNOTSUPP): GNU `ls -l`
    /// then stops asking for them after the first file, where it asked every file twice (a
    /// GETXATTR round trip each, which the kernel does not cache).
    func testLongListingAsksNoLabelOrACLPerFile() throws {
        try requireFuseTracepoints()
        let n = 300
        try fill(services: ["labels"], accounts: n)
        XCTAssertEqual(try h.run(["unlock-keychain"], input: passphrase + "\n").status, 0)
        let mnt = try mount()
        let file = mnt + "/labels/acct7"
        for name in ["security.selinux", "system.posix_acl_access"] {
            assertErrno(FS.getxattr(file, name).errno, EOPNOTSUPP, name)
        }
        XCTAssertEqual(FS.xattr(file, "user.keychain.access-group"), "default", "the mount's own attributes still read")
        let listing = try requests(["/bin/ls", "-l", mnt + "/labels"], in: mnt)
        XCTAssertGreaterThan(listing["READDIRPLUS", default: 0], 0, "the listing was counted")
        XCTAssertLessThanOrEqual(listing["GETXATTR", default: 0], 4, "at most one label and one ACL question, not two per file")
    }

    private func requireFuseTracepoints() throws {
        let events = "/sys/kernel/tracing/events/fuse/fuse_request_send"
        // tracefs is mounted as fuseops.sh would, and left mounted (another run may be using it).
        if !FileManager.default.fileExists(atPath: events) { _ = try runProgram(["/bin/mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"]) }
        guard FileManager.default.fileExists(atPath: events) else {
            throw XCTSkip("this kernel has no fuse tracepoints to count lookups with")
        }
    }

    /// Stops the daemon and fills the vault in process (thousands of CLI adds would take long).
    private func fill(services: [String], accounts: Int) throws {
        let stopped = try h.run(["stop"])
        XCTAssertEqual(stopped.status, 0, "\(stopped)")
        let vault = try Vault.open(at: h.vault, deviceKey: try DeviceKey.loadOrCreate(at: h.environment["KEYCHAINFS_DEVICE_KEY"]!))
        try vault.unlock(passphrase: try SecureBytes(copying: Array(passphrase.utf8)))
        try vault.addAll(try services.flatMap { s in
            try (0..<accounts).map { i in
                ([.class: .itemClass(.genericPassword), .service: .string(s), .account: .string("acct\(i)")],
                 try SecureBytes(copying: Array("secret \(i)".utf8)))
            }
        }, accessGroups: ["default"])
    }

    /// The LOOKUPs a `stat` of `names` makes of the mount.
    private func lookups(of names: [String], in mnt: String) throws -> Int {
        try requests(["/usr/bin/stat", "-c", "%s"] + names, in: mnt)["LOOKUP", default: 0]
    }

    /// The requests `command` makes of the mount by opcode, counted by bench/fuseops.sh (which
    /// fails when the command does).
    private func requests(_ command: [String], in mnt: String) throws -> [String: Int] {
        let fuseops = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("bench/fuseops.sh").path
        let r = try runProgram([fuseops, mnt] + command)
        XCTAssertEqual(r.status, 0, r.description)
        var counts: [String: Int] = [:]
        for line in r.stdoutText.split(separator: "\n") where line.hasPrefix("op=") {
            let fields = line.split(separator: " ")
            guard let count = fields.first(where: { $0.hasPrefix("requests=") }).flatMap({ Int($0.dropFirst("requests=".count)) })
            else { continue }
            counts[String(fields[0].dropFirst("op=".count))] = count
        }
        return counts
    }
}
