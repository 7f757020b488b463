import Glibc
import KeychainSystem
import XCTest

/// One thread for a run of jobs: they run in the order given, all on that one thread (not the
/// caller's), and none is taken after `finish`.
final class SerialThreadTests: XCTestCase {
    private struct Runs: Sendable {
        var order: [Int] = []
        var threads: Set<UInt> = []
    }

    private func waitFor(_ count: Int, in runs: ConditionLock<Runs>) -> Runs {
        let deadline = monotonicSeconds() + 10
        return runs.wait { s -> ConditionLock<Runs>.Decision<Runs> in
            s.order.count >= count || monotonicSeconds() > deadline ? .done(s) : .waitUntil(seconds: deadline)
        }
    }

    private func monotonicSeconds() -> Double {
        let t = SystemClock.monotonic()
        return Double(t.seconds) + Double(t.nanoseconds) / 1e9
    }

    func testJobsRunInOrderOnOneThreadOfTheirOwn() throws {
        let worker = try SerialThread()
        let runs = ConditionLock(Runs())
        for i in 0..<50 {
            XCTAssertTrue(worker.run {
                usleep(UInt32(i % 3) * 200)  // uneven jobs: order comes from the queue, not timing
                let me = UInt(pthread_self())
                runs.withLockWakingWaiters { $0.order.append(i); $0.threads.insert(me) }
            })
        }
        let seen = waitFor(50, in: runs)
        XCTAssertEqual(seen.order, Array(0..<50))
        XCTAssertEqual(seen.threads.count, 1, "one thread for every job")
        XCTAssertFalse(seen.threads.contains(UInt(pthread_self())), "not the caller's thread")
        worker.finish()
    }

    func testJobsGivenBeforeFinishRunAndLaterOnesAreRefused() throws {
        let worker = try SerialThread()
        let runs = ConditionLock(Runs())
        let gate = ConditionLock(false)
        worker.run { gate.wait { $0 ? .done(()) : .wait } }  // holds the thread while more are queued
        for i in 0..<3 { worker.run { runs.withLockWakingWaiters { $0.order.append(i) } } }
        worker.finish()
        XCTAssertFalse(worker.run { runs.withLockWakingWaiters { $0.order.append(99) } }, "refused after finish")
        gate.withLockWakingWaiters { $0 = true }
        XCTAssertEqual(waitFor(3, in: runs).order, [0, 1, 2], "queued before finish: all run")
        usleep(50_000)
        XCTAssertEqual(runs.withLock { $0.order }, [0, 1, 2], "the refused job never ran")
    }
}
