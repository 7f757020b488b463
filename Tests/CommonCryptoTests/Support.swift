import Foundation
import XCTest

/// Bytes from hex, spaces allowed (the RFCs print vectors in groups).
func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace }.utf8)
    precondition(digits.count % 2 == 0, "odd hex")
    func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: preconditionFailure("not hex")
        }
    }
    return stride(from: 0, to: digits.count, by: 2).map { nibble(digits[$0]) << 4 | nibble(digits[$0 + 1]) }
}

func hexString(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// Deterministic test bytes (not a secret, not random): a simple LCG, so failures reproduce.
func pattern(_ count: Int, seed: UInt32 = 1) -> [UInt8] {
    var state = seed
    return (0..<count).map { _ in
        state = state &* 1_103_515_245 &+ 12345
        return UInt8(truncatingIfNeeded: state >> 16)
    }
}

/// Runs /usr/bin/openssl with `arguments`, `input` on stdin; its stdout, or nil (and a test
/// failure) when it exits non-zero.
func runOpenSSL(_ arguments: [String], input: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8]? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = arguments
    let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    // The inputs here are a few KiB, under a pipe's buffer, so writing before reading is safe.
    stdin.fileHandleForWriting.write(Data(input))
    try stdin.fileHandleForWriting.close()
    let out = stdout.fileHandleForReading.readDataToEndOfFile()
    let err = stderr.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        XCTFail("openssl \(arguments.joined(separator: " ")) exited \(process.terminationStatus): "
                + (String(data: err, encoding: .utf8) ?? ""), file: file, line: line)
        return nil
    }
    return Array(out)
}
