import Foundation
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
}
