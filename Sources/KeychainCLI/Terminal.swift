import Glibc
import KeychainModel
import KeychainCrypto
import KeychainSystem

/// Reading passphrases and secrets without echo, from standard input or the terminal.
package enum Terminal {
    package static var stdinIsTerminal: Bool { isatty(0) == 1 }

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
                let n = retryingOnInterrupt { read(fd, b.baseAddress! + count, 1) }
                if n < 0 { return false }
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
        var capacity = 4096
        var buf = try SecureBytes(count: capacity)
        var count = 0
        while true {
            if count == capacity {
                guard capacity < limit else { throw KeychainStatus.param }
                let bigger = try SecureBytes(count: capacity * 2)
                buf.withUnsafeBytes { src in bigger.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: count) } }
                buf = bigger
                capacity *= 2
            }
            let n = buf.withUnsafeMutableBytes { b in retryingOnInterrupt { read(0, b.baseAddress! + count, capacity - count) } }
            if n < 0 { throw KeychainStatus.io }
            if n == 0 { break }
            count += n
        }
        let trailingNewline = count > 0 && buf.withUnsafeBytes { $0[count - 1] } == 10
        return try buf.slice(0..<(trailingNewline ? count - 1 : count))
    }

    /// Prompts on the controlling terminal with echo off.
    package static func prompt(_ text: String) throws -> SecureBytes {
        let tty = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard tty >= 0 else { throw UsageError("no terminal to ask for a passphrase; give it on standard input") }
        defer { close(tty) }
        writeString(tty, text)
        var saved = termios()
        let haveTermios = tcgetattr(tty, &saved) == 0
        if haveTermios {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(tty, TCSAFLUSH, &quiet)
        }
        defer {
            if haveTermios { tcsetattr(tty, TCSAFLUSH, &saved) }
            writeString(tty, "\n")
        }
        guard let line = try readLine(tty) else { throw KeychainStatus.userCanceled }
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
        let tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        guard tty >= 0 else { return false }
        close(tty)
        return true
    }
}
