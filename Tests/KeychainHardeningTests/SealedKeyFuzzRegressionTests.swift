import Foundation
import Glibc
import KeychainCore
import KeychainTPM
import XCTest

/// The TPM-wrapped blobs read back from disk (the FuzzSealedKey target, docs/fuzzing.md) fed the
/// checked-in seed corpus and hostile variants: the sealed device key file and a Secure Enclave
/// key's item secret parse to what encodes back to the same bytes, or fail as damaged.
final class SealedKeyFuzzRegressionTests: XCTestCase {
    static func corpus() throws -> [(String, [UInt8])] {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Fuzz/Corpus/FuzzSealedKey").standardized.path
        return try FileManager.default.contentsOfDirectory(atPath: dir).sorted().map {
            ($0, Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/" + $0))))
        }
    }

    /// What the target does with one input: each parser either throws ParseError or round-trips.
    /// Returns which of the two accepted it.
    func replay(_ bytes: [UInt8], _ name: String) -> (sealed: Bool, token: Bool) {
        var accepted = (sealed: false, token: false)
        do {
            let s = try SealedKey.parse(bytes)
            XCTAssertEqual(s.encoded(), bytes, "\(name): a parsed sealed key encodes back to its bytes")
            accepted.sealed = true
        } catch {
            XCTAssertTrue(error is SealedKey.ParseError, "\(name): \(type(of: error))")
        }
        do {
            let t = try TokenKey(blob: bytes)
            XCTAssertEqual(t.blob, bytes, "\(name): a parsed token key encodes back to its blob")
            accepted.token = true
        } catch {
            XCTAssertTrue(error is SealedKey.ParseError, "\(name): \(type(of: error))")
        }
        return accepted
    }

    func testCorpusParsesAndRoundTripsOrIsDamaged() throws {
        let files = try Self.corpus()
        XCTAssertGreaterThanOrEqual(files.count, 6)
        for (name, bytes) in files {
            let accepted = replay(bytes, name)
            if name.hasPrefix("valid-token") {
                XCTAssertTrue(accepted.token, name)
            } else if name.hasPrefix("valid-") {
                XCTAssertTrue(accepted.sealed, name)
            } else {
                XCTAssertFalse(accepted.sealed || accepted.token, "\(name) must not parse")
            }
            // Every prefix and every input with one more byte is damaged, never a trap.
            for cut in 0..<bytes.count {
                let r = replay(Array(bytes.prefix(cut)), "\(name) cut at \(cut)")
                XCTAssertFalse(r.sealed || r.token, "\(name) cut at \(cut) parsed")
            }
            XCTAssertFalse(replay(bytes + [0], "\(name) + 1 byte").sealed, name)
        }
    }

    func testHostileSealedFilesAreNamedDamagedOrNewer() throws {
        let seed = try XCTUnwrap(Self.corpus().first { $0.0 == "valid-pcr7-recovery" }?.1)
        func reason(_ bytes: [UInt8]) -> String? {
            do { _ = try SealedKey.parse(bytes); return nil } catch { return "\(error)" }
        }
        var newer = seed
        newer[9] = 3
        XCTAssertEqual(reason(newer), "the sealed device key file has format 3, newer than this build's 2")
        var unnamed = seed
        unnamed[9] = 2  // format 2 needs the storage root key's name after the four areas
        XCTAssertEqual(reason(unnamed), "the sealed device key file is damaged")
        var zero = seed
        zero[9] = 0
        XCTAssertEqual(reason(zero), "the sealed device key file is damaged")
        var pcr24 = seed
        pcr24[10] = 1  // mask bit 24
        XCTAssertEqual(reason(pcr24), "the sealed device key file is damaged")
        // A length prefix past the end, or of 4 GiB.
        var long = seed
        long.replaceSubrange(14..<18, with: [0xff, 0xff, 0xff, 0xff])
        XCTAssertEqual(reason(long), "the sealed device key file is damaged")
        // Through the file reader, as the daemon and `device-key status` read it: errSecDecode
        // naming the file, for every damaged variant; the seed itself reads as sealed.
        let dir = NSTemporaryDirectory() + "kcfs-sealedfuzz-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (i, bytes) in [seed, newer, unnamed, zero, pcr24, long].enumerated() {
            let path = "\(dir)/key\(i)"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            chmod(path, 0o400)
            do {
                let contents = try DeviceKeyStore.read(at: path)
                guard case .sealed = contents else { return XCTFail("variant \(i) read as \(contents)") }
                XCTAssertEqual(i, 0, "variant \(i) read as sealed")
            } catch let e as DeviceKeyError {
                XCTAssertNotEqual(i, 0, "\(e)")
                XCTAssertEqual(e.status, .decode, "\(e)")
                XCTAssertTrue(e.description.hasPrefix(path + ": "), "\(e)")
            }
        }
    }
}
