import KeychainSystem
import XCTest

/// The lock with a condition: state only under the lock, waiters woken by a change, timed
/// waits on the monotonic clock.
final class ConditionLockTests: XCTestCase {
    private func seconds() -> Double {
        let t = SystemClock.monotonic()
        return Double(t.seconds) + Double(t.nanoseconds) / 1e9
    }

    struct Handoff {
        var queue: [Int] = []
        var taken: Int?
    }

    func testAWaiterSeesTheChangeThatWokeIt() {
        let lock = ConditionLock(Handoff())
        DispatchQueue.global().async {
            let value = lock.wait { s -> ConditionLock<Handoff>.Decision<Int> in
                s.queue.isEmpty ? .wait : .done(s.queue.removeFirst())
            }
            lock.withLockWakingWaiters { $0.taken = value }
        }
        usleep(50_000)  // the waiter is most likely waiting by now; if not, it finds the value at once
        lock.withLockWakingWaiters { $0.queue.append(7) }
        let deadline = seconds() + 10
        let taken = lock.wait { s -> ConditionLock<Handoff>.Decision<Int?> in
            if let t = s.taken { return .done(t) }
            return seconds() > deadline ? .done(nil) : .waitUntil(seconds: deadline)
        }
        XCTAssertEqual(taken, 7)
        XCTAssertEqual(lock.withLock { $0.queue }, [], "taken once")
    }

    func testATimedWaitEndsAtItsDeadlineWithoutAWakeUp() {
        let lock = ConditionLock(0)
        let start = seconds()
        var looks = 0
        let result = lock.wait { _ -> ConditionLock<Int>.Decision<String> in
            looks += 1
            return seconds() >= start + 0.1 ? .done("late") : .waitUntil(seconds: start + 0.1)
        }
        XCTAssertEqual(result, "late")
        XCTAssertGreaterThanOrEqual(seconds() - start, 0.1)
        XCTAssertLessThan(seconds() - start, 5)
        XCTAssertLessThan(looks, 100, "the thread slept rather than spun")
    }

    func testADeadlineInThePastLooksAgainAtOnce() {
        let lock = ConditionLock(false)
        var looks = 0
        let result = lock.wait { _ -> ConditionLock<Bool>.Decision<Int> in
            looks += 1
            return looks == 2 ? .done(looks) : .waitUntil(seconds: 0)
        }
        XCTAssertEqual(result, 2)
    }

    func testManyThreadsChangingTheStateLoseNoChange() {
        let lock = ConditionLock(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { lock.withLock { $0 += 1 } }
        }
        XCTAssertEqual(lock.withLock { $0 }, 80_000)
    }

    func testAThrowingBodyLetsTheLockGo() {
        struct Refused: Error {}
        let lock = ConditionLock(1)
        XCTAssertThrowsError(try lock.withLockWakingWaiters { _ in throw Refused() })
        XCTAssertThrowsError(try lock.withLock { _ in throw Refused() })
        XCTAssertEqual(lock.withLock { $0 }, 1, "not held: this returns")
    }
}
