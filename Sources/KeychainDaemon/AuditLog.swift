import Glibc
import KeychainAccess
import KeychainCore
import KeychainCrypto

/// The append-only, hash-chained audit log (PRODUCT 8): one line per read, write, denial, lock
/// and unlock, with the caller's uid, pid and executable, never a secret or a name.
///
/// A line is `SEQ TIME UID PID EVENT DETAIL EXE CHAIN`, fields separated by tabs, where CHAIN is
/// the hex keyed BLAKE2b-256 of the previous line's CHAIN and this line without its CHAIN. The
/// key is derived from the vault's index key, so only the daemon can extend or verify the chain,
/// and an edited, inserted or removed line breaks it. Items are named by their persistent
/// reference in hex, never by service or account.
final class AuditLog: @unchecked Sendable {
    let path: String
    private let key: SecureBytes
    private var mutex = pthread_mutex_t()
    private var seq: Int64 = 0
    private var head: [UInt8] = [UInt8](repeating: 0, count: 32)
    private var fd: Int32 = -1

    /// Opens (creating, mode 0600) the log and reads its last line to continue the chain.
    init(path: String, key: SecureBytes) {
        self.path = path
        self.key = key
        pthread_mutex_init(&mutex, nil)
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        // Only the end of the file matters: the last whole line continues the chain, and half a
        // line after it (a crash mid-write) chains nowhere, so it is cut off.
        var st = stat()
        guard fd >= 0, fstat(fd, &st) == 0, st.st_size > 0 else { return }
        let size = Int(st.st_size)
        let tailLength = min(size, 64 * 1024)
        let reader = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard reader >= 0 else { return }
        defer { close(reader) }
        var tail = [UInt8](repeating: 0, count: tailLength)
        guard pread(reader, &tail, tailLength, off_t(size - tailLength)) == tailLength else { return }
        guard let lastNewline = tail.lastIndex(of: 10) else { return }
        if lastNewline != tail.count - 1 { _ = ftruncate(fd, off_t(size - tailLength + lastNewline + 1)) }
        let lineStart = tail[..<lastNewline].lastIndex(of: 10).map { $0 + 1 } ?? 0
        let last = String(decoding: tail[lineStart..<lastNewline], as: UTF8.self)
        let fields = last.split(separator: "\t", omittingEmptySubsequences: false)
        if fields.count == 8, let n = Int64(fields[0]), let h = Self.unhex(String(fields[7])) {
            seq = n
            head = h
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Appends one event. `detail` must never hold a secret or an attribute value.
    func record(_ event: String, caller: CallerIdentity?, detail: String = "-") {
        // Built as bytes: a line is written for every file open, so it must cost little.
        let tab = UInt8(ascii: "\t")
        var line: [UInt8] = []
        line.reserveCapacity(256)
        let uid = caller.map { String($0.uid) } ?? "-", pid = caller.map { String($0.pid) } ?? "-"
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        seq += 1
        line += String(seq).utf8; line.append(tab)
        line += String(time(nil)).utf8; line.append(tab)
        line += uid.utf8; line.append(tab)
        line += pid.utf8; line.append(tab)
        Self.appendClean(event, to: &line); line.append(tab)
        Self.appendClean(detail, to: &line); line.append(tab)
        Self.appendClean(caller?.executable ?? "-", to: &line)
        head = KeyedHash.hash(head + line, key: key, length: 32)
        line.append(tab)
        Hex.append(head, to: &line)
        line.append(UInt8(ascii: "\n"))
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Makes every recorded line durable (on lock and stop).
    func sync() { fsync(fd) }

    /// Checks every line's chain from the first. Returns the number of lines and the first bad
    /// line number (1-based), if any.
    func verify() -> (lines: Int, firstBad: Int?) {
        guard let text = readSmallFile(path) else { return (0, nil) }
        var previous = [UInt8](repeating: 0, count: 32)
        var expectedSeq: Int64 = 1
        var count = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty {
            count += 1
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 8, Int64(fields[0]) == expectedSeq,
                  let stored = Self.unhex(String(fields[7])) else { return (count, count) }
            let body = fields[0..<7].joined(separator: "\t")
            let computed = chain(previous: previous, body: body)
            guard computed == stored else { return (count, count) }
            previous = computed
            expectedSeq += 1
        }
        return (count, nil)
    }

    /// The last line's number and chain value, for `status`.
    func headLine() -> (line: Int64, chain: String) {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return (seq, Hex.encode(head))
    }

    /// The whole log's text, for `keychainfs audit`.
    func contents() -> String { readSmallFile(path) ?? "" }

    private func chain(previous: [UInt8], body: String) -> [UInt8] {
        KeyedHash.hash(previous + Array(body.utf8), key: key, length: 32)
    }

    /// Appends `s` with tabs, newlines and other control characters escaped, so no field can
    /// forge a line.
    static func appendClean(_ s: String, to out: inout [UInt8]) {
        if s.isEmpty { return out.append(UInt8(ascii: "-")) }
        for b in s.utf8 {
            // Control characters are single bytes in UTF-8: no scalar decoding is needed.
            if b < 0x20 || b == 0x7f { out += "\\x\(String(b, radix: 16))".utf8 } else { out.append(b) }
        }
    }

    static func unhex(_ s: String) -> [UInt8]? {
        guard s.utf8.count == 64 else { return nil }
        return Hex.decode(s)
    }
}
