import Foundation
import XCTest

// Shared helpers of the Hardening* tests (issue 7): canaries, raw CLI runs, byte-level file
// names, and a reader of another process's writable memory through /proc/PID/mem.

package enum Canary {
    private static let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789".utf8)

    /// `count` random letters and digits: a string that appears nowhere by chance.
    package static func make(_ count: Int = 24) -> String {
        var rng = SystemRandomNumberGenerator()
        return String(decoding: (0..<count).map { _ in alphabet.randomElement(using: &rng)! }, as: UTF8.self)
    }

    /// `count` random bytes.
    package static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var rng = SystemRandomNumberGenerator()
        var i = 0
        while i < count {
            var word = rng.next() as UInt64
            for _ in 0..<8 where i < count {
                out[i] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                i += 1
            }
        }
        return out
    }

    /// `count` random printable ASCII characters (no newline), for secrets that print as text.
    package static func text(_ count: Int) -> String {
        String(decoding: bytes(count).map { alphabet[Int($0) % alphabet.count] }, as: UTF8.self)
    }
}

extension CLIHarness {
    /// Runs `keychainfs ARGS` with raw bytes on standard input and returns raw output bytes
    /// (the harness's `run` decodes standard output as UTF-8, which repairs binary secrets).
    package func runRaw(_ args: [String], input: [UInt8] = [], timeout: Double = 60) throws -> Spawn.Outcome {
        let r = try Spawn.run([CLIHarness.binary] + args, environment: environment, input: Data(input), timeout: timeout)
        if r.timedOut { XCTFail("keychainfs \(args.map { $0.prefix(40) }) did not finish within \(timeout) s") }
        return r
    }

    /// `dump-keychain -d --json` as a list of objects; fails the test unless it exits 0.
    package func dump(file: StaticString = #filePath, line: UInt = #line) throws -> [[String: Any]] {
        let r = try run(["dump-keychain", "-d", "--json"], file: file, line: line)
        XCTAssertEqual(r.status, 0, "dump-keychain -d --json: \(r.status) \(r.stderr)", file: file, line: line)
        XCTAssertFalse(r.stderr.contains("decode"), "dump-keychain reports a damaged item: \(r.stderr)", file: file, line: line)
        guard let list = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]] else {
            if r.status == 0 { XCTFail("dump-keychain --json is not a list: \(r.stdout.prefix(200))", file: file, line: line) }
            return []
        }
        return list
    }
}

/// A JSON value of the CLI's (`"text"` or `{"hex": "..."}`) as bytes.
package func jsonBytes(_ value: Any?) -> [UInt8]? {
    if let s = value as? String { return Array(s.utf8) }
    if let o = value as? [String: Any], let hex = o["hex"] as? String { return hardeningUnhex(hex) }
    return nil
}

package func hardeningUnhex(_ hex: String) -> [UInt8]? {
    let c = Array(hex.utf8)
    guard c.count % 2 == 0 else { return nil }
    func v(_ x: UInt8) -> UInt8? {
        switch x {
        case 48...57: return x - 48
        case 65...70: return x - 55
        case 97...102: return x - 87
        default: return nil
        }
    }
    var out: [UInt8] = []
    var i = 0
    while i < c.count {
        guard let hi = v(c[i]), let lo = v(c[i + 1]) else { return nil }
        out.append(hi << 4 | lo)
        i += 2
    }
    return out
}

package func hardeningHex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// Filesystem calls on paths given as bytes (names that are not valid UTF-8).
package enum RawFS {
    package static func withPath<R>(_ path: [UInt8], _ body: (UnsafePointer<CChar>) -> R) -> R {
        let c = (path + [0]).map { CChar(bitPattern: $0) }
        return c.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    package static func join(_ dir: String, _ name: [UInt8]) -> [UInt8] { Array(dir.utf8) + [UInt8(ascii: "/")] + name }

    /// open(O_WRONLY|O_CREAT|O_TRUNC), write everything, close: the first errno, or 0.
    package static func write(_ path: [UInt8], _ bytes: [UInt8]) -> Int32 {
        let fd = withPath(path) { open($0, O_WRONLY | O_CREAT | O_TRUNC, 0o600) }
        guard fd >= 0 else { return errno }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n < 0 { let e = errno; close(fd); return e }
            done += n
        }
        return close(fd) == 0 ? 0 : errno
    }

    package static func read(_ path: [UInt8]) -> (bytes: [UInt8]?, errno: Int32) {
        let fd = withPath(path) { open($0, O_RDONLY) }
        guard fd >= 0 else { return (nil, errno) }
        defer { close(fd) }
        return FS.readAll(fd, chunk: 1 << 17)
    }

    package static func stat(_ path: [UInt8]) -> (st: Glibc.stat?, errno: Int32) {
        var st = Glibc.stat()
        let rc = withPath(path) { rawStat($0, &st) }
        return rc == 0 ? (st, 0) : (nil, errno)
    }

    package static func mkdir(_ path: [UInt8]) -> Int32 {
        withPath(path) { Glibc.mkdir($0, 0o755) } == 0 ? 0 : errno
    }

    /// The names of a directory as bytes, without `.` and `..`.
    package static func list(_ path: String) -> [[UInt8]]? {
        guard let dir = opendir(path) else { return nil }
        defer { closedir(dir) }
        var names: [[UInt8]] = []
        while let entry = readdir(dir) {
            let name: [UInt8] = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: UInt8.self, capacity: 256) { p in
                    var out: [UInt8] = []
                    var i = 0
                    while i < 256 && p[i] != 0 { out.append(p[i]); i += 1 }
                    return out
                }
            }
            if name != [46] && name != [46, 46] { names.append(name) }
        }
        return names
    }
}

/// stat(2), out of `RawFS` whose own `stat` hides it.
private func rawStat(_ path: UnsafePointer<CChar>, _ st: inout stat) -> Int32 { stat(path, &st) }

/// Holds a non-Sendable value for threads that use it one at a time or thread-safely.
package final class Unchecked<T>: @unchecked Sendable {
    package let value: T
    package init(_ value: T) { self.value = value }
}

/// The documented name of a value (docs/filesystem.md "Names"), for values whose escaped form
/// fits in 255 bytes; nil when the name is the `%H` hash form.
package func documentedName(_ value: [UInt8], service: Bool) -> [UInt8]? {
    if value.isEmpty { return [UInt8(ascii: "%")] }
    let hex = Array("0123456789ABCDEF".utf8)
    let escapeDot = service || value == [46] || value == [46, 46]
    var out: [UInt8] = []
    for (i, b) in value.enumerated() {
        if b == UInt8(ascii: "%") || b == UInt8(ascii: "/") || b == 0 || (i == 0 && b == 46 && escapeDot) {
            out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 15)]]
        } else {
            out.append(b)
        }
    }
    return out.count > 255 ? nil : out
}

/// `%H` and BLAKE2b-128 (unkeyed) of `value` in upper-case hex, computed with coreutils' b2sum.
package func hashedName(_ value: [UInt8], scratch: String) throws -> [UInt8] {
    let path = scratch + "/b2-\(UUID().uuidString.prefix(8))"
    XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(value)), path)
    defer { unlink(path) }
    let r = try runProgram(["/usr/bin/b2sum", "-l", "128", path])
    let digest = r.stdoutText.split(separator: " ").first.map(String.init) ?? ""
    return Array(("%H" + digest.uppercased()).utf8)
}

// MARK: - Reading another process's memory

/// Another process's memory, read as root through /proc/PID/maps and /proc/PID/mem.
package enum ProcessMemory {
    package struct Region: CustomStringConvertible {
        package var start: UInt64
        package var end: UInt64
        package var perms: String
        package var path: String
        /// smaps VmFlags (`lo` locked, `dd` left out of core dumps: libsodium guarded memory).
        package var flags: Set<String> = []
        package var size: UInt64 { end - start }
        package var guarded: Bool { flags.contains("dd") }
        package var description: String {
            String(format: "%llx-%llx %@ %@ (%llu KiB, flags %@)", start, end, perms, path.isEmpty ? "[anon]" : path,
                   size / 1024, flags.sorted().joined(separator: " "))
        }

        package init(start: UInt64, end: UInt64, perms: String, path: String, flags: Set<String> = []) {
            self.start = start
            self.end = end
            self.perms = perms
            self.path = path
            self.flags = flags
        }
    }

    package struct Hit: CustomStringConvertible {
        package var needle: String
        package var region: Region
        package var offset: UInt64
        package var before: [UInt8]
        package var after: [UInt8]
        package var address: UInt64 { region.start + offset }
        package var description: String {
            "\(needle) at 0x\(String(address, radix: 16)) = offset 0x\(String(offset, radix: 16)) of \(region); "
                + "\(before.count) bytes before: \(hardeningHex(before)) | \(printable(before)); "
                + "after: \(hardeningHex(after)) | \(printable(after))"
        }

        package init(needle: String, region: Region, offset: UInt64, before: [UInt8], after: [UInt8]) {
            self.needle = needle
            self.region = region
            self.offset = offset
            self.before = before
            self.after = after
        }
    }

    package struct Scan {
        package var regions: [Region] = []
        package var bytesRead: UInt64 = 0
        package var unreadable: [(Region, Int32)] = []
        package var hits: [Hit] = []

        package func hits(of needle: String) -> [Hit] { hits.filter { $0.needle == needle } }
        package var summary: String {
            "\(regions.count) writable regions, \(bytesRead / 1024) KiB read, \(unreadable.count) unreadable"
                + (unreadable.isEmpty ? "" : " (" + unreadable.map { "\($0.0) errno \($0.1)" }.joined(separator: "; ") + ")")
        }

        package init(regions: [Region] = [], bytesRead: UInt64 = 0, unreadable: [(Region, Int32)] = [], hits: [Hit] = []) {
            self.regions = regions
            self.bytesRead = bytesRead
            self.unreadable = unreadable
            self.hits = hits
        }
    }

    package static func printable(_ bytes: [UInt8]) -> String {
        String(bytes.map { (32..<127).contains($0) ? Character(UnicodeScalar($0)) : "." })
    }

    /// The writable mappings of `pid` with their smaps flags.
    package static func writableRegions(_ pid: Int32) throws -> [Region] {
        guard let maps = readProcFile("/proc/\(pid)/maps") else {
            throw NSError(domain: "ProcessMemory", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "cannot read /proc/\(pid)/maps"])
        }
        var regions: [Region] = []
        for line in maps.split(separator: "\n") {
            let f = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard f.count >= 5 else { continue }
            let range = f[0].split(separator: "-")
            guard range.count == 2, let s = UInt64(range[0], radix: 16), let e = UInt64(range[1], radix: 16) else { continue }
            let perms = String(f[1])
            guard perms.hasPrefix("rw") else { continue }
            let path = f.count > 5 ? f[5].trimmingCharacters(in: .whitespaces) : ""
            regions.append(Region(start: s, end: e, perms: perms, path: path))
        }
        // VmFlags from smaps, by start address.
        if let smaps = readProcFile("/proc/\(pid)/smaps") {
            var current: UInt64?
            var flags: [UInt64: Set<String>] = [:]
            for line in smaps.split(separator: "\n") {
                if let dash = line.firstIndex(of: "-"), let s = UInt64(line[..<dash], radix: 16), line.contains(" ") {
                    current = s
                } else if line.hasPrefix("VmFlags:"), let c = current {
                    flags[c] = Set(line.dropFirst(8).split(separator: " ").map(String.init))
                }
            }
            for i in regions.indices { regions[i].flags = flags[regions[i].start] ?? [] }
        }
        return regions
    }

    /// The whole of a /proc file (Foundation's String(contentsOfFile:) stops after the first read).
    package static func readProcFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return FS.readAll(fd, chunk: 1 << 16).bytes.map { String(decoding: $0, as: UTF8.self) }
    }

    private typealias MemMem = @convention(c) (UnsafeRawPointer?, Int, UnsafeRawPointer?, Int) -> UnsafeMutableRawPointer?
    private static let memmem: MemMem = unsafeBitCast(dlsym(dlopen(nil, RTLD_NOW), "memmem")!, to: MemMem.self)

    /// Reads every writable mapping of `pid` and finds every occurrence of each needle.
    /// - Parameter needles: name → bytes.
    package static func scan(_ pid: Int32, for needles: [(String, [UInt8])], context: Int = 48) throws -> Scan {
        var result = Scan()
        result.regions = try writableRegions(pid)
        let fd = open("/proc/\(pid)/mem", O_RDONLY)
        guard fd >= 0 else { throw NSError(domain: "ProcessMemory", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "open /proc/\(pid)/mem: errno \(errno)"]) }
        defer { close(fd) }
        for region in result.regions {
            guard region.size < 1 << 32 else { continue }
            var buf = [UInt8](repeating: 0, count: Int(region.size))
            var done = 0
            var failed: Int32 = 0
            while done < buf.count {
                let n = buf.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress! + done, $0.count - done, off_t(Int64(bitPattern: region.start + UInt64(done)))) }
                if n <= 0 { failed = n < 0 ? errno : EIO; break }
                done += n
            }
            if failed != 0 && done == 0 { result.unreadable.append((region, failed)); continue }
            result.bytesRead += UInt64(done)
            buf.withUnsafeBytes { raw in
                for (name, needle) in needles where !needle.isEmpty {
                    needle.withUnsafeBytes { n in
                        var from = 0
                        while from + needle.count <= done,
                              let p = memmem(raw.baseAddress! + from, done - from, n.baseAddress, needle.count) {
                            let off = raw.baseAddress!.distance(to: UnsafeRawPointer(p))
                            let lo = max(0, off - context), hi = min(done, off + needle.count + context)
                            result.hits.append(Hit(needle: name, region: region, offset: UInt64(off),
                                                   before: Array(buf[lo..<off]), after: Array(buf[(off + needle.count)..<hi])))
                            from = off + 1
                        }
                    }
                }
            }
        }
        return result
    }
}

/// UTF-16LE bytes of an ASCII string (how Foundation's NSString may keep a copy).
package func utf16le(_ s: String) -> [UInt8] { s.utf16.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8($0 >> 8)] } }

/// Runs `body` on `count` threads at once and waits for all of them.
package func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        Thread.detachNewThread {
            body(i)
            group.leave()
        }
    }
    group.wait()
}

/// True when `point` is a mount point now (a line of /proc/mounts names it).
package func isMountPoint(_ point: String) -> Bool {
    let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
    return mounts.split(separator: "\n").contains { $0.split(separator: " ").dropFirst().first.map(String.init) == point }
}
