import Foundation
import KeychainTestSupport
import XCTest

/// Readers and writers on one file at once: every read returns one whole version (issue 5).
final class MountConcurrencyTests: MountTestCase {
    final class Tally: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var reads = 0, writes = 0
        private(set) var torn: [String] = []
        private(set) var errors: [String] = []
        private var stopped = false
        var stop: Bool {
            get { lock.lock(); defer { lock.unlock() }; return stopped }
            set { lock.lock(); stopped = newValue; lock.unlock() }
        }
        func read(ok: Bool, _ note: @autoclosure () -> String) {
            lock.lock()
            reads += 1
            if !ok && torn.count < 10 { torn.append(note()) }
            lock.unlock()
        }
        func wrote() { lock.lock(); writes += 1; lock.unlock() }
        func error(_ e: String) { lock.lock(); if errors.count < 10 { errors.append(e) }; lock.unlock() }
    }

    func testReadersAndWritersSeeWholeVersions() throws {
        let length = 100
        let a = [UInt8](repeating: UInt8(ascii: "A"), count: length)
        let b = [UInt8](repeating: UInt8(ascii: "B"), count: length)
        try add("conc", "item", String(decoding: a, as: UTF8.self))
        let mnt = try mount()
        let path = mnt + "/conc/item"
        let tally = Tally()
        let done = DispatchGroup()

        func thread(_ body: @escaping @Sendable () -> Void) {
            done.enter()
            let t = Thread {
                body()
                done.leave()
            }
            t.start()
        }
        for w in 0..<2 {
            thread {
                var i = w
                while !tally.stop {
                    let version = i % 2 == 0 ? a : b
                    i += 1
                    let e = FS.write(path, version)
                    if e != 0 { tally.error("write: \(FS.name(e))") } else { tally.wrote() }
                }
            }
        }
        for r in 0..<8 {
            // Half the readers take the file in 7-byte reads: one open must see one version
            // across all of its reads.
            let chunk = r % 2 == 0 ? 4096 : 7
            thread {
                while !tally.stop {
                    let fd = open(path, O_RDONLY)
                    guard fd >= 0 else {
                        tally.error("open: \(FS.name(errno))")
                        continue
                    }
                    let (bytes, e) = FS.readAll(fd, chunk: chunk)
                    close(fd)
                    guard let bytes else {
                        tally.error("read: \(FS.name(e))")
                        continue
                    }
                    let whole = bytes.count == length && (bytes.allSatisfy { $0 == a[0] } || bytes.allSatisfy { $0 == b[0] })
                    tally.read(ok: whole, "\(bytes.count) bytes: \(String(decoding: bytes.prefix(120), as: UTF8.self).debugDescription)")
                }
            }
        }
        Thread.sleep(forTimeInterval: 2)
        tally.stop = true
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success, "the threads finished")

        print("MountConcurrencyTests: \(tally.reads) whole reads, \(tally.writes) writes in 2 s")
        XCTAssertEqual(tally.torn, [], "torn reads out of \(tally.reads)")
        XCTAssertEqual(tally.errors, [])
        XCTAssertGreaterThan(tally.reads, 50, "readers made progress")
        XCTAssertGreaterThan(tally.writes, 10, "writers made progress")
        let final = try secret("conc", "item")
        XCTAssertTrue(final == String(decoding: a, as: UTF8.self) || final == String(decoding: b, as: UTF8.self),
                      "the stored secret is one whole version: \(final ?? "nil")")
    }
}
