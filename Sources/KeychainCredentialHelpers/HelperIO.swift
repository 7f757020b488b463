import KeychainModel
import KeychainCrypto
import KeychainSystem

/// Standard input and output of a credential helper. What is read may hold a secret, so it is
/// read into guarded memory; secrets are written from guarded memory straight to the descriptor.
enum HelperIO {
    /// Most bytes a helper reads: a credential or a docker login is a few hundred bytes, an
    /// OAuth token a few kilobytes.
    static let inputLimit = 1 << 20

    /// Reads standard input into guarded memory until EOF, or until a blank line when
    /// `stopAtBlankLine` (git's protocol: the caller may keep the pipe open after it).
    /// Blank-line reads go byte by byte so that nothing past the credential is consumed.
    /// - Throws: `KeychainStatus.param` past `inputLimit`, `.io` on a read error,
    ///   `CryptoError.allocationFailed` when no guarded memory is left.
    static func readInput(stopAtBlankLine: Bool) throws -> SecureBytes {
        var buffer = try SecureBytes(count: 4096)
        var count = 0
        while true {
            if count == buffer.count {
                guard buffer.count < inputLimit else { throw KeychainStatus.param }
                let bigger = try SecureBytes(count: buffer.count * 2)
                buffer.withUnsafeBytes { src in
                    bigger.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: count) }
                }
                buffer = bigger
            }
            let want = stopAtBlankLine ? 1 : buffer.count - count
            let n: Int
            do {
                n = try buffer.withUnsafeMutableBytes { b throws(Errno) in
                    try Descriptor.readSome(into: UnsafeMutableRawBufferPointer(rebasing: b[count..<(count + want)]), from: 0)
                }
            } catch {
                throw KeychainStatus.io
            }
            if n == 0 { break }
            count += n
            if stopAtBlankLine, endsWithBlankLine(buffer, count) { break }
        }
        return try buffer.slice(0..<count)
    }

    /// True when the first `count` bytes end a line that is empty (`\n` at the start or `\n\n`).
    private static func endsWithBlankLine(_ buffer: SecureBytes, _ count: Int) -> Bool {
        buffer.withUnsafeBytes { b in
            guard b[count - 1] == 10 else { return false }
            return count == 1 || b[count - 2] == 10
        }
    }

    /// Writes all of `buffer` to `fd`. - Throws: `KeychainStatus.io` when the write fails.
    static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws {
        do { try Descriptor.writeAll(buffer, to: fd) } catch { throw KeychainStatus.io }
    }

    static func write(_ fd: Int32, _ text: String) throws {
        try Array(text.utf8).withUnsafeBytes { try write(fd, $0) }
    }

    /// Writes `text` to standard error, ignoring failure (the message is all there is to say).
    static func complain(_ text: String) {
        try? write(2, text + "\n")
    }
}
