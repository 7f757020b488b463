import Foundation
import KeychainTestSupport
import XCTest

/// Opens of presence-gated files wait for a slow approval program off the kernel's workers
/// (PRODUCT 11): every other read of the mount is answered meanwhile.
final class MountGatedOpenQueueTests: MountTestCase {
    func testPlainReadsAreAnsweredWhileTwentyGatedOpensWait() throws {
        let program = h.dir + "/approve.sh"
        try "#!/bin/sh\nsleep 2\nexit 0\n".write(toFile: program, atomically: true, encoding: .utf8)
        chmod(program, 0o755)
        XCTAssertEqual(try h.run(["set-keychain-settings", "--approval-program", program, "--approval-timeout", "20"]).status, 0)
        let gated = try h.run(["add-generic-password", "-s", "gated", "-a", "app", "-w", "gated-secret",
                               "--access-control", "userPresence"])
        XCTAssertEqual(gated.status, 0, "\(gated)")
        try add("plain", "app", "plain-secret")
        let mnt = try mount()
        final class Results: @unchecked Sendable { var value = [(bytes: [UInt8]?, errno: Int32)?](repeating: nil, count: 20) }
        let results = Results()
        let lock = NSLock()
        let done = DispatchGroup()
        for i in 0..<20 {
            done.enter()
            Thread.detachNewThread {
                let r = FS.read(mnt + "/gated/app")
                lock.lock()
                results.value[i] = r
                lock.unlock()
                done.leave()
            }
        }
        usleep(500_000)  // the gated opens are all waiting for the program now
        for round in 0..<3 {
            let start = Date()
            let plain = FS.read(mnt + "/plain/app")
            XCTAssertEqual(plain.bytes.map { String(decoding: $0, as: UTF8.self) }, "plain-secret", "round \(round)")
            XCTAssertLessThan(Date().timeIntervalSince(start), 1.0, "a plain read answered within a second (round \(round))")
            XCTAssertEqual(FS.stat(mnt + "/plain/app").errno, FS.ok)
        }
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success, "every gated open was answered")
        lock.lock()
        let outcomes = results.value
        lock.unlock()
        for (i, r) in outcomes.enumerated() {
            guard let r else { XCTFail("open \(i) never returned"); continue }
            // Approved, or refused at once past the bounded queue: never a wrong byte.
            if r.errno == FS.ok {
                XCTAssertEqual(r.bytes.map { String(decoding: $0, as: UTF8.self) }, "gated-secret", "open \(i)")
            } else {
                XCTAssertEqual(r.errno, EAGAIN, "open \(i): \(FS.name(r.errno))")
            }
        }
        XCTAssertGreaterThanOrEqual(outcomes.filter { $0?.errno == FS.ok }.count, 4, "the approved opens read the secret")
    }

    func testUnmountingWhileAGatedOpenWaitsLeavesTheDaemonServing() throws {
        let program = h.dir + "/approve.sh"
        try "#!/bin/sh\nsleep 2\nexit 0\n".write(toFile: program, atomically: true, encoding: .utf8)
        chmod(program, 0o755)
        XCTAssertEqual(try h.run(["set-keychain-settings", "--approval-program", program]).status, 0)
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "gated", "-a", "app", "-w", "gated-secret",
                                  "--access-control", "userPresence"]).status, 0)
        let mnt = try mount()
        let pid = try h.daemonPID()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = FS.read(mnt + "/gated/app")
            done.signal()
        }
        usleep(500_000)
        XCTAssertTrue(try unmount(mnt))
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "the waiting open returned")
        sleep(2)  // the approval answers after the mount is gone
        XCTAssertEqual(try h.daemonPID(), pid, "the same daemon still serves")
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "gated", "-a", "app"]).status, 0)
    }
}
