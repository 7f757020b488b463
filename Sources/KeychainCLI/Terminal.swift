import KeychainModel
import KeychainCrypto
import KeychainSystem

/// Reading passphrases and secrets without echo, from standard input or the terminal.
package enum Terminal {
    package static var stdinIsTerminal: Bool { FileDescriptor.standardInput.isTerminal }

    package static func warn(_ text: String) { writeString(2, "keychainfs: " + text + "\n") }

    package static func writeString(_ fd: Int32, _ s: String) {
        let bytes = Array(s.utf8)
        bytes.withUnsafeBytes { writeAll(fd, $0) }
    }

    static func writeAll(_ fd: Int32, _ buf: UnsafeRawBufferPointer) {
        try? Descriptor.writeAll(buf, to: fd)  // a closed terminal or pipe: nothing more to say
    }

    /// Reads one line (without its newline) from `fd` into guarded memory, byte by byte so that
    /// nothing past the line is consumed. - Throws: `CryptoError.allocationFailed`.
    static func readLine(_ fd: Int32, limit: Int = 1 << 16) throws -> SecureBytes? {
        let buf = try SecureBytes(count: limit)
        var count = 0
        var sawAny = false
        let ok: Bool = buf.withUnsafeMutableBytes { b in
            while count < limit {
                guard let n = try? FileDescriptor(rawValue: fd).read(into: UnsafeMutableRawBufferPointer(rebasing: b[count..<count + 1])) else {
                    return false
                }
                if n == 0 { return sawAny }
                sawAny = true
                if b[count] == 10 { b[count] = 0; return true }
                count += 1
            }
            return true
        }
        guard ok else { return nil }
        return try buf.slice(0..<count)
    }

    /// Reads all of standard input (a secret given with `-w -`); one trailing newline is dropped.
    static func readAllStdin(limit: Int = 64 << 20) throws -> SecureBytes {
        do {
            return try readAll(.standardInput, limit: limit, droppingTrailingNewline: true)
        } catch is Errno {
            throw KeychainStatus.io
        }
    }

    /// Reads `fd` to its end into guarded memory, growing the buffer by copies that are wiped
    /// (a secret file, a pipe, standard input).
    /// - Throws: errSecParam past `limit` bytes, the read's `Errno`, errSecAllocate.
    static func readAll(_ fd: FileDescriptor, limit: Int, droppingTrailingNewline: Bool) throws -> SecureBytes {
        var capacity = 4096
        var buf = try SecureBytes(count: capacity)
        var count = 0
        while true {
            if count == capacity {
                // One byte past the limit tells a file of exactly `limit` bytes from a longer one.
                guard capacity <= limit else { throw KeychainStatus.param }
                let bigger = try SecureBytes(count: min(capacity * 2, limit + 1))
                buf.withUnsafeBytes { src in bigger.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: count) } }
                buf = bigger
                capacity = bigger.count
            }
            let n = try buf.withUnsafeMutableBytes { b throws(Errno) in
                try fd.read(into: UnsafeMutableRawBufferPointer(rebasing: b[count..<capacity]))
            }
            if n == 0 { break }
            count += n
        }
        let trailingNewline = droppingTrailingNewline && count > 0 && buf.withUnsafeBytes { $0[count - 1] } == 10
        return try buf.slice(0..<(trailingNewline ? count - 1 : count))
    }

    /// The exact bytes of the file at `path` (`--secret-file PATH`, `-w @PATH`): no newline is
    /// dropped, so a PEM keeps its last one. A pipe (`<(command)`) is read too.
    /// - Throws: `StateError` naming the path (never the contents): errSecIO when it cannot be
    ///   opened or read, errSecParam past the largest secret an item holds.
    static func readSecretFile(_ path: String) throws -> SecureBytes {
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(path, .readOnly) } catch {
            throw StateError(message: "cannot read the secret file \(path): \(error)", status: .io)
        }
        defer { try? fd.close() }
        do {
            return try readAll(fd, limit: ItemLimits.maximumSecretLength, droppingTrailingNewline: false)
        } catch let e as Errno {
            throw StateError(message: "cannot read the secret file \(path): \(e)", status: .io)
        } catch KeychainStatus.param {
            throw StateError.explained(.param, "the secret file \(path) is larger than \(ItemLimits.maximumSecretLength >> 20) MiB, the most an item holds")
        }
    }

    /// Prompts on the controlling terminal with echo off.
    package static func prompt(_ text: String) throws -> SecureBytes {
        guard let tty = try? FileDescriptor.open("/dev/tty", .readWrite) else {
            throw UsageError("no terminal to ask for a passphrase; give it on standard input")
        }
        defer { try? tty.close() }
        writeString(tty.rawValue, text)
        defer { writeString(tty.rawValue, "\n") }
        let line = try tty.withEchoOff { try readLine(tty.rawValue) }
        guard let line else { throw KeychainStatus.userCanceled }
        return line
    }

    /// A passphrase: `-p` (with a warning), else a line of standard input when it is not a
    /// terminal, else a prompt.
    package static func passphrase(_ args: Arguments, flag: String = "-p", prompt text: String) throws -> SecureBytes {
        if let p = args.value(flag) {
            warn("a passphrase on the command line is visible to other users; prefer standard input")
            return try SecureBytes(copying: Array(p.utf8))
        }
        if !stdinIsTerminal {
            guard let line = try readLine(0) else { throw UsageError("no passphrase on standard input") }
            return line
        }
        return try prompt(text)
    }
}

extension Terminal {
    /// True when this process has a controlling terminal to prompt on.
    package static var hasTerminal: Bool {
        guard let tty = try? FileDescriptor.open("/dev/tty", .readWrite, options: .noControllingTerminal) else { return false }
        try? tty.close()
        return true
    }
}
