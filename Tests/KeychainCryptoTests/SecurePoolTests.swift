import Glibc
import KeychainCrypto
import XCTest

/// Guarded memory from pooled regions: what many held buffers cost in memory mappings, that a
/// reused slot is zero, and that the budget refuses with an error instead of crashing.
final class SecurePoolTests: XCTestCase {
    private var savedBudget = 0

    override func setUp() { savedBudget = SecureBytes.budget }
    override func tearDown() { SecureBytes.budget = savedBudget }

    /// The process's memory mappings: lines of /proc/self/maps.
    private func mappingCount() throws -> Int {
        let fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw POSIXError(.ENOENT) }
        defer { close(fd) }
        var lines = 0
        var buf = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = read(fd, &buf, buf.count)
            if n <= 0 { break }
            lines += buf[0..<n].reduce(0) { $1 == 10 ? $0 + 1 : $0 }
        }
        return lines
    }

    private func address(_ b: SecureBytes) -> UInt {
        b.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
    }

    func testHoldingManyBuffersCostsFewMappings() throws {
        // Before pooling, each of these took its own sodium_malloc: about 3 mappings apiece,
        // past vm.max_map_count (65530), and the next allocation crashed the daemon.
        let before = try mappingCount()
        let mappedBefore = SecureBytes.mappedBytes
        var held: [SecureBytes] = []
        held.reserveCapacity(100_200)
        var g: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<100_000 {
            g = g &* 6364136223846793005 &+ 1442695040888963407
            held.append(try SecureBytes(count: 1 + Int(g >> 33) % 4096))
        }
        for _ in 0..<200 { held.append(try SecureBytes(count: 64 << 10)) }
        let grown = try mappingCount() - before
        print("SecurePool: \(held.count) buffers held, \(grown) new mappings, \(SecureBytes.mappedBytes >> 20) MiB mapped")
        XCTAssertLessThan(grown, 400)
        // Every buffer is its own memory: a byte written to one shows in no other.
        for (i, b) in held.enumerated() where b.count > 0 {
            b.withUnsafeMutableBytes { $0[0] = UInt8(truncatingIfNeeded: i) }
        }
        for (i, b) in held.enumerated() where b.count > 0 {
            XCTAssertEqual(b.withUnsafeBytes { $0[0] }, UInt8(truncatingIfNeeded: i))
        }
        // Released, the regions go back to the system but for a few kept for reuse.
        held.removeAll()
        let kept = SecureBytes.mappedBytes - mappedBefore
        print("SecurePool: all released, \(kept >> 10) KiB still mapped, \(try mappingCount() - before) new mappings")
        XCTAssertLessThanOrEqual(kept, 32 << 20)
    }

    func testReleasedSlotsReadBackZeroWhenReused() throws {
        // A size of each class, and the whole slot it takes when asked for again.
        let sizes = [(1, 64), (64, 64), (65, 128), (600, 1024), (1000, 1024), (4096, 4096), (5000, 8192),
                     (64 << 10, 64 << 10), (700 << 10, 1 << 20)]
        for (size, slot) in sizes {
            // One buffer stays held so the region is not unmapped in between.
            let keeper = try SecureBytes(count: size)
            var dirty: [SecureBytes] = []
            for _ in 0..<3 {
                let b = try SecureBytes(count: size)
                b.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0xAB) }
                dirty.append(b)
            }
            let released = Set(dirty.map(address))
            dirty.forEach { $0.wipe() }
            let reused = try (0..<3).map { _ in try SecureBytes(count: slot) }
            XCTAssertEqual(Set(reused.map(address)), released, "the freed slots of \(size) bytes are taken again")
            for b in reused {
                XCTAssertTrue(b.withUnsafeBytes { $0.allSatisfy { $0 == 0 } }, "a reused \(slot)-byte slot reads zero")
            }
            keeper.wipe()
        }
    }

    func testOverBudgetThrowsAndSucceedsAfterRelease() throws {
        // Buffers of their own (over 1 MiB): each needs new budget.
        SecureBytes.budget = SecureBytes.mappedBytes + (5 << 20)
        let first = try SecureBytes(count: 2 << 20)
        let second = try SecureBytes(count: 2 << 20)
        XCTAssertThrowsError(try SecureBytes(count: 2 << 20)) { XCTAssertEqual($0 as? CryptoError, .allocationFailed) }
        XCTAssertThrowsError(try SecureBytes.random(count: 2 << 20)) { XCTAssertEqual($0 as? CryptoError, .allocationFailed) }
        XCTAssertThrowsError(try first.slice(0..<(3 << 19))) { XCTAssertEqual($0 as? CryptoError, .allocationFailed) }
        first.wipe()
        let third = try SecureBytes.random(count: 2 << 20)
        XCTAssertEqual(third.count, 2 << 20)
        second.wipe()
        third.wipe()

        // Pooled buffers: free slots are used until a new region would be needed.
        let seed = try SecureBytes(count: 200 << 10)  // the 256 KiB class has a region
        SecureBytes.budget = SecureBytes.mappedBytes
        var held = [seed]
        var refused: Error?
        for _ in 0..<1000 {
            do { held.append(try SecureBytes(count: 200 << 10)) } catch { refused = error; break }
        }
        XCTAssertEqual(refused as? CryptoError, .allocationFailed)
        held.removeLast().wipe()
        XCTAssertNoThrow(held.append(try SecureBytes(count: 200 << 10)))
    }

    func testLowerBudgetThanMappedFreesNothingAndRefusesNewRegions() throws {
        let held = try SecureBytes(copying: [1, 2, 3])
        SecureBytes.budget = 0
        XCTAssertEqual(held.withUnsafeBytes { Array($0) }, [1, 2, 3])
        XCTAssertThrowsError(try SecureBytes(count: 3 << 20)) { XCTAssertEqual($0 as? CryptoError, .allocationFailed) }
    }

    func testBufferAboveTheLargestClassWorksAndIsReleased() throws {
        let mapped = SecureBytes.mappedBytes
        let maps = try mappingCount()
        let big = try SecureBytes(count: (1 << 20) + 1)
        XCTAssertGreaterThan(SecureBytes.mappedBytes, mapped + (1 << 20))
        big.withUnsafeMutableBytes { b in for i in stride(from: 0, to: b.count, by: 4096) { b[i] = UInt8(i >> 12 & 0xFF) } }
        XCTAssertTrue(big.withUnsafeBytes { b in stride(from: 0, to: b.count, by: 4096).allSatisfy { b[$0] == UInt8($0 >> 12 & 0xFF) } })
        XCTAssertEqual(big.withUnsafeBytes { $0[(1 << 20)] }, 0)  // the last byte, beyond any slot
        big.wipe()  // sodium_free zeroes, then unmaps
        XCTAssertTrue(big.isWiped)
        XCTAssertEqual(SecureBytes.mappedBytes, mapped)
        XCTAssertEqual(try mappingCount(), maps)
    }
}
