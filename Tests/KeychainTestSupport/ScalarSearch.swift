import Foundation
import XCTest

/// Looks for a P-256 private scalar that nobody knows (it never left the TPM) by what it must
/// satisfy: d·G equals the key's public point. Every 32-byte window of the searched bytes with at
/// least `minimumDistinct` different byte values is a candidate, read big-endian (as the TSS
/// marshals a TPM2B_ECC_PARAMETER) and little-endian (an OpenSSL BIGNUM's 64-bit limbs on x86-64);
/// python3's `cryptography` multiplies each by G. A uniformly random scalar has fewer than 22
/// distinct bytes with probability below 10⁻⁶, so a scalar held anywhere in the bytes, in either
/// order, in one piece, is found with at least that certainty (docs/testing.md).
package enum ScalarSearch {
    package static let minimumDistinct = 22

    package struct Result {
        /// Candidate windows (distinct values) that were multiplied out.
        package var candidates: Int
        /// Bytes searched.
        package var bytes: Int
        /// Windows (hex) whose scalar gives the public point.
        package var matches: [String]
    }

    /// The distinct candidate windows of `bytes`.
    package static func candidates(_ bytes: [UInt8], into set: inout Set<[UInt8]>) {
        guard bytes.count >= 32 else { return }
        var counts = [Int](repeating: 0, count: 256)
        var distinct = 0
        for i in 0..<32 {
            if counts[Int(bytes[i])] == 0 { distinct += 1 }
            counts[Int(bytes[i])] += 1
        }
        var start = 0
        while true {
            if distinct >= minimumDistinct { set.insert(Array(bytes[start..<(start + 32)])) }
            guard start + 32 < bytes.count else { break }
            let out = Int(bytes[start]), new = Int(bytes[start + 32])
            counts[out] -= 1
            if counts[out] == 0 { distinct -= 1 }
            if counts[new] == 0 { distinct += 1 }
            counts[new] += 1
            start += 1
        }
    }

    /// Which of `windows` are a private scalar of `publicPoint` (`04 || X || Y`, P-256).
    package static func matches(_ windows: Set<[UInt8]>, publicPoint: [UInt8], scratch: String) throws -> [String] {
        precondition(publicPoint.count == 65 && publicPoint[0] == 4)
        let file = scratch + "/candidates-\(UUID().uuidString.prefix(8))"
        try Data(windows.flatMap { $0 }).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let hex = publicPoint.map { String(format: "%02x", $0) }.joined()
        let script = """
            import multiprocessing, os, sys
            from cryptography.hazmat.primitives.asymmetric import ec
            n = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
            point = bytes.fromhex(sys.argv[2])
            qx, qy = int.from_bytes(point[1:33], "big"), int.from_bytes(point[33:], "big")

            def check(chunk):
                found = []
                for i in range(0, len(chunk), 32):
                    w = chunk[i:i + 32]
                    for k in {int.from_bytes(w, "big"), int.from_bytes(w, "little")}:
                        if 0 < k < n:
                            p = ec.derive_private_key(k, ec.SECP256R1()).public_key().public_numbers()
                            if p.x == qx and p.y == qy:
                                found.append(w.hex())
                return found

            if __name__ == "__main__":
                data = open(sys.argv[1], "rb").read()
                step = 32 * 4096
                chunks = [data[i:i + step] for i in range(0, len(data), step)]
                with multiprocessing.get_context("fork").Pool(min(4, os.cpu_count() or 1)) as pool:
                    for found in pool.map(check, chunks):
                        for w in found:
                            print(w)
                print("done")
            """
        let r = try Spawn.run(["/usr/bin/python3", "-c", script, file, hex], environment: ["PATH": "/usr/bin:/bin"],
                              input: Data(), timeout: 1800)
        let out = String(decoding: r.out, as: UTF8.self)
        guard r.status == 0, out.hasSuffix("done\n") else {
            throw XCTSkip("python3 with cryptography is needed for the scalar search (scripts/setup.sh): "
                          + String(decoding: r.err, as: UTF8.self))
        }
        return out.split(separator: "\n").dropLast().map(String.init)
    }

    /// Searches the writable memory of `pid` (root: /proc/PID/mem) and the files `paths`.
    package static func search(pid: Int32?, files paths: [String], publicPoint: [UInt8], scratch: String) throws -> Result {
        var windows = Set<[UInt8]>()
        var total = 0
        if let pid {
            let fd = open("/proc/\(pid)/mem", O_RDONLY)
            guard fd >= 0 else { throw XCTSkip("cannot read /proc/\(pid)/mem (errno \(errno)): run as root") }
            defer { close(fd) }
            for region in try ProcessMemory.writableRegions(pid) where region.size < 1 << 32 {
                var buf = [UInt8](repeating: 0, count: Int(region.size))
                var done = 0
                while done < buf.count {
                    let n = buf.withUnsafeMutableBytes {
                        pread(fd, $0.baseAddress! + done, $0.count - done, off_t(Int64(bitPattern: region.start + UInt64(done))))
                    }
                    if n <= 0 { break }
                    done += n
                }
                total += done
                candidates(Array(buf[..<done]), into: &windows)
            }
        }
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            total += data.count
            candidates(Array(data), into: &windows)
        }
        return Result(candidates: windows.count, bytes: total,
                      matches: try matches(windows, publicPoint: publicPoint, scratch: scratch))
    }
}
