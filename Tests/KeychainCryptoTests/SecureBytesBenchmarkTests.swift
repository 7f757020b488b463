import KeychainCrypto
import XCTest

/// Prints what an allocate/release of guarded memory costs; asserts nothing about time.
final class SecureBytesBenchmarkTests: XCTestCase {
    func testPrintAllocateReleaseCost() throws {
        for size in [32, 600, 1000, 4096, 64 << 10, 2 << 20] {
            let rounds = size > 64 << 10 ? 200 : 20_000
            // One at a time, as a short request does.
            let single = try nanoseconds(rounds) { _ = try SecureBytes(count: size) }
            // Eight held at once, as an open holds a path, a key and the contents.
            let held = try nanoseconds(rounds / 8) {
                let batch = try (0..<8).map { _ in try SecureBytes(count: size) }
                XCTAssertEqual(batch.count, 8)
            } / 8
            print("SecureBytes \(size) bytes: \(single) ns per allocate+release, \(held) ns each when 8 are held")
        }
    }

    private func nanoseconds(_ rounds: Int, _ body: () throws -> Void) rethrows -> Int {
        for _ in 0..<min(rounds, 100) { try body() }  // warm the free slots
        let start = ContinuousClock.now
        for _ in 0..<rounds { try body() }
        let elapsed = ContinuousClock.now - start
        let total = elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
        return Int(total) / rounds
    }
}
