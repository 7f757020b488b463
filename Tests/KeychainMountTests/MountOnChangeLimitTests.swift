import Foundation
import KeychainTestSupport
import XCTest

/// A mount's `on_change` command (PRODUCT 11): it runs only for items the mount shows, and a
/// burst of changes costs a few runs, one at a time, that together account for every change.
final class MountOnChangeLimitTests: MountTestCase {
    var marker: String { h.dir + "/on-change" }

    func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func testAViewsCommandRunsOnlyForTheViewsItems() throws {
        XCTAssertEqual(try h.run(["group", "add", "team", "--mode", "0440"]).status, 0)
        try mount("groups=team,on_change=echo $KEYCHAINFS_EVENT $KEYCHAINFS_SERVICE/$KEYCHAINFS_ACCOUNT >> \(marker)")
        // Outside the view: through the socket, and through another mount of the whole vault.
        let whole = try mount()
        try add("private", "p", "x")
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "private", "-a", "p", "-w", "y", "-U"]).status, 0)
        assertErrno(FS.write(whole + "/private/q", "z"), FS.ok, "write outside the view")
        XCTAssertEqual(try h.run(["delete-generic-password", "-s", "private", "-a", "p"]).status, 0)
        // Inside it.
        try add("shared", "s", "x", ["--access-group", "team"])
        XCTAssertTrue(h.waitUntil(3) { lines(marker).count >= 1 })
        usleep(500_000)
        XCTAssertEqual(lines(marker), ["add shared/s"], "no run, and no name, for items the view does not show")
    }

    func testABurstIsFoldedIntoFewRunsOneAtATime() throws {
        let command = "echo start $KEYCHAINFS_CHANGES $KEYCHAINFS_SERVICE >> \(marker); sleep 0.2; echo end >> \(marker)"
        let mnt = try mount("on_change=\(command)")
        try add("burst", "f", "0")
        XCTAssertTrue(h.waitUntil(3) { lines(marker).count == 2 })
        let changes = 400
        let start = Date()
        for i in 0..<changes {
            let e = FS.write(mnt + "/burst/f", "change \(i)")
            if e != FS.ok { return XCTFail("write \(i): \(FS.name(e))") }
        }
        let burst = Date().timeIntervalSince(start)
        // Every change is accounted for once the runs catch up.
        func reported() -> Int {
            lines(marker).filter { $0.hasPrefix("start ") }.compactMap { Int($0.split(separator: " ")[1]) }.reduce(0, +)
        }
        XCTAssertTrue(h.waitUntil(10) { reported() == changes + 1 && lines(marker).last == "end" },
                      "\(reported()) of \(changes + 1) changes reported")
        let got = lines(marker)
        let runs = got.filter { $0.hasPrefix("start ") }
        // One at a time: starts and ends alternate.
        let alternating = got.enumerated().allSatisfy { i, line in line.hasPrefix("start ") == (i % 2 == 0) }
        XCTAssertTrue(alternating, "runs overlapped: \(got.prefix(12))")
        // Each run takes 0.2 s, so at most one per 0.2 s of the burst and its tail, plus the first.
        XCTAssertLessThanOrEqual(runs.count, Int((burst + 2) / 0.2) + 2, "\(runs.count) runs for \(changes) changes")
        XCTAssertLessThan(runs.count, changes / 4, "a burst is folded: \(runs.count) runs")
        XCTAssertTrue(runs.dropFirst().allSatisfy { $0.hasSuffix(" burst") }, "the service they all share is named")
    }
}
