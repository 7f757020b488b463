import Dispatch
import Glibc
import KeychainSystem
import KeychainfsAccess
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
///
/// A line is written whole or not at all: every `record` throws `KeychainStatus.diskFull`
/// (ENOSPC, EDQUOT) or `.io` when its line could not be written, after cutting off whatever part
/// of it reached the file, and the chain (SEQ and CHAIN) advances only past lines that are in the
/// file. So a full disk costs the lines of what was refused, never the chain: the next line
/// written continues it. Lines reach the disk with `sync` (lock and stop).
final class AuditLog: @unchecked Sendable {
    let path: String
    private let key: SecureBytes
    private var mutex = pthread_mutex_t()
    private var seq: Int64 = 0
    private var head: [UInt8] = [UInt8](repeating: 0, count: 32)
    private var fd: Int32 = -1
    /// The line being built; kept between records so recording allocates nothing.
    private var line: [UInt8] = []
    /// Repeated opens counted since the last `flushRepeats`, by process and item.
    private var repeats: [RepeatKey: Repeated] = [:]
    private var flushScheduled = false
    /// The last line could not be written: opens are not counted unseen until one is.
    private var unwritten = false
    /// The end of the file that is part of a failed line and could not be cut off yet.
    private var cutBytes = 0
    /// How long repeated opens are counted before their line is written.
    static let repeatWindow = 1.0
    /// The current file's length, as written by this log.
    private var size: Int64 = 0
    /// The length past which a line starts a new file (`audit-max-size`); 0 never rotates.
    private var maxSize: Int64 = 0
    private var rotating = false
    private var files: AuditFiles { AuditFiles(path: path) }

    /// Hashes only numbers and the reference (this is looked up on every open); the event and
    /// executable are compared on a hit.
    private struct RepeatKey: Hashable {
        let uid: UInt32
        let pid: Int32
        let ref: PersistentRef
    }

    private struct Repeated {
        let event: AuditEvent
        let caller: CallerIdentity
        var count: Int
    }

    /// Opens (creating, mode 0600) the log and reads its last line to continue the chain.
    init(path: String, key: SecureBytes) {
        self.path = path
        self.key = key
        line.reserveCapacity(512)
        pthread_mutex_init(&mutex, nil)
        AuditFiles(path: path).recoverRotation()
        // A log that cannot be opened fails every line (errSecIO): nothing is served unlogged.
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        // Only the end of the file matters: the last whole line continues the chain, and half a
        // line after it (a crash mid-write) chains nowhere, so it is cut off (now, or before the
        // next line if the cut fails). A tail that cannot be read leaves the log unwritable
        // rather than restart the chain after lines it cannot see.
        var st = stat()
        guard fd >= 0 else { return }
        guard fstat(fd, &st) == 0 else { unusable(); return }
        guard st.st_size > 0 else { return }
        self.size = Int64(st.st_size)
        let size = Int(st.st_size)
        let tailLength = min(size, 64 * 1024)
        let reader = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard reader >= 0 else { unusable(); return }
        defer { close(reader) }
        var tail = [UInt8](repeating: 0, count: tailLength)
        guard pread(reader, &tail, tailLength, off_t(size - tailLength)) == tailLength else { unusable(); return }
        guard let lastNewline = tail.lastIndex(of: 10) else {
            // Not one whole line: the first line was cut, and the chain starts afresh.
            if tailLength == size {
                cutBytes = size
                _ = cutPartialLine()
            }
            return
        }
        if lastNewline != tail.count - 1 {
            cutBytes = tail.count - 1 - lastNewline
            _ = cutPartialLine()
        }
        let lineStart = tail[..<lastNewline].lastIndex(of: 10).map { $0 + 1 } ?? 0
        let last = String(decoding: tail[lineStart..<lastNewline], as: UTF8.self)
        let fields = last.split(separator: "\t", omittingEmptySubsequences: false)
        if fields.count == 8, let n = Int64(fields[0]), let h = Self.unhex(String(fields[7])) {
            seq = n
            head = h
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    private func unusable() {
        close(fd)
        fd = -1
    }

    /// Appends one event. `detail` must never hold a secret or an attribute value.
    /// - Throws: `KeychainStatus.diskFull` or `.io` when the line could not be written.
    func record(_ event: AuditEvent, caller: CallerIdentity?, detail: String = "-") throws {
        try append(event.rawValue, caller) { Self.appendClean(detail, to: &$0) }
    }

    /// Appends the `EVENT-failed` line of a change that failed after its line was written.
    func recordFailure(_ event: AuditEvent, caller: CallerIdentity?, status: Int32) throws {
        try append(event.failed, caller) { Self.appendClean("status=\(status)", to: &$0) }
    }

    /// Appends one event about an item, named by its persistent reference in hex.
    /// - Throws: `KeychainStatus.diskFull` or `.io` when the line could not be written.
    func record(_ event: AuditEvent, caller: CallerIdentity?, item ref: PersistentRef) throws {
        try append(event.rawValue, caller) { Self.appendItem(ref, to: &$0) }
    }

    /// Records an open of an item that a process may repeat many times a second (a program that
    /// reads its secret file on every request). The first open by a process is a line of its own,
    /// written before the open is answered; the process's further opens of the item within the
    /// same second are counted and written as one `EVENT-repeated` line, detail `REF count=N`,
    /// when the second ends, and before a lock, a stop, `audit` and `status`. A crash can lose the
    /// counts not yet written, never the first open.
    ///
    /// A count whose line cannot be written stays pending and is retried every second; while
    /// the log cannot be written, no open is counted: each needs its own line, and fails.
    /// - Throws: `KeychainStatus.diskFull` or `.io`: the open must be refused.
    func recordRepeatable(_ event: AuditEvent, caller: CallerIdentity, item ref: PersistentRef) throws {
        let key = RepeatKey(uid: caller.uid, pid: caller.pid, ref: ref)
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        // After a failed line, the pending counts go first, then this open needs a line of its own.
        if unwritten { try flushLocked() }
        if !unwritten, let seen = repeats[key], seen.event == event, seen.caller.executable == caller.executable {
            repeats[key]!.count += 1
            return
        }
        // Another program under a reused pid, or another event: the old count is written first.
        if let other = repeats[key] {
            try appendRepeated(key.ref, other)
            repeats[key] = nil
        }
        try appendLocked(event.rawValue, caller) { Self.appendItem(ref, to: &$0) }
        repeats[key] = Repeated(event: event, caller: caller, count: 0)
        scheduleFlushLocked()
        rotateIfFull()
    }

    /// Writes the counts of repeated opens and starts counting afresh.
    /// - Throws: `KeychainStatus.diskFull` or `.io`; the counts not written stay pending.
    func flushRepeats() throws {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        try flushLocked()
    }

    private func flushLocked() throws {
        flushScheduled = false
        // Whatever could not be written is tried again a second later.
        defer { if repeats.values.contains(where: { $0.count > 0 }) { scheduleFlushLocked() } }
        for (key, seen) in repeats {
            try appendRepeated(key.ref, seen)
            repeats[key] = nil
        }
    }

    private func scheduleFlushLocked() {
        guard !flushScheduled else { return }
        flushScheduled = true
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.repeatWindow) { [self] in try? flushRepeats() }
    }

    private func appendRepeated(_ ref: PersistentRef, _ seen: Repeated) throws {
        guard seen.count > 0 else { return }
        try appendLocked(seen.event.repeated, seen.caller) { line in
            Self.appendItem(ref, to: &line)
            line += " count=".utf8
            Self.appendDecimal(Int64(seen.count), to: &line)
        }
    }

    static func appendItem(_ ref: PersistentRef, to line: inout [UInt8]) {
        Hex.append(ref.itemClass.rawValue.utf8, to: &line)
        Hex.append(ref.uuid, to: &line)
    }

    private func append(_ event: String, _ caller: CallerIdentity?, detail: (inout [UInt8]) -> Void) throws {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        try appendLocked(event, caller, detail: detail)
        rotateIfFull()
    }

    /// Builds a line in one reused buffer and hashes it in place: the mount records every file
    /// open before answering it, so a line must cost little. SEQ and CHAIN advance only once
    /// the whole line is in the file.
    private func appendLocked(_ event: String, _ caller: CallerIdentity?, detail: (inout [UInt8]) -> Void) throws {
        guard cutPartialLine() else {
            unwritten = true
            throw KeychainStatus.writeFailure(errno)
        }
        let tab = UInt8(ascii: "\t")
        let nextSeq = seq + 1
        var nextHead = head
        line.removeAll(keepingCapacity: true)
        Self.appendDecimal(nextSeq, to: &line); line.append(tab)
        Self.appendDecimal(Int64(time(nil)), to: &line); line.append(tab)
        if let caller { Self.appendDecimal(Int64(caller.uid), to: &line) } else { line.append(UInt8(ascii: "-")) }
        line.append(tab)
        if let caller { Self.appendDecimal(Int64(caller.pid), to: &line) } else { line.append(UInt8(ascii: "-")) }
        line.append(tab)
        Self.appendClean(event, to: &line); line.append(tab)
        detail(&line); line.append(tab)
        Self.appendClean(caller?.executable ?? "-", to: &line)
        line.withUnsafeBytes { KeyedHash.extend(&nextHead, with: $0, key: key) }
        line.append(tab)
        Hex.append(nextHead, to: &line)
        line.append(UInt8(ascii: "\n"))
        var done = 0
        while done < line.count {
            let n = line.withUnsafeBytes { b in retryingOnInterrupt { write(fd, b.baseAddress! + done, b.count - done) } }
            guard n > 0 else {
                let e = n < 0 ? errno : EIO
                // Half a line would chain nowhere and hide every line after it: cut it off now
                // (or before the next line, if even that fails).
                cutBytes = done
                _ = cutPartialLine()
                unwritten = true
                throw KeychainStatus.writeFailure(e)
            }
            done += n
        }
        seq = nextSeq
        head = nextHead
        unwritten = false
        size += Int64(line.count)
    }

    /// Rotates once the file has reached `maxSize`, after a whole record (never between the
    /// lines of one flush). The lines are in the file either way: a rotation that fails is
    /// tried again after the next line.
    private func rotateIfFull() {
        if maxSize > 0, size >= maxSize, !rotating { _ = try? rotateLocked() }
    }

    /// Sets the length past which the log moves to a new file (`audit-max-size`; 0: never).
    func setMaxSize(_ bytes: Int64) {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        maxSize = bytes
    }

    /// Moves the current file aside as the next `VAULT.audit.N` and starts a new one whose
    /// first line, `rotated`, names that file and its last CHAIN and continues its chain.
    /// Returns the rotated file's path.
    /// - Throws: `KeychainStatus.diskFull` or `.io`; the log then goes on in the same file.
    func rotate() throws -> String {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try rotateLocked()
    }

    /// The new file gets its first line before it takes the current one's place, so at every
    /// moment `VAULT.audit` holds a whole log that continues the chain (a crash in between is
    /// undone at the next start: `AuditFiles.recoverRotation`).
    private func rotateLocked() throws -> String {
        rotating = true
        defer { rotating = false }
        try flushLocked()
        guard fd >= 0 else { throw KeychainStatus.io }
        guard fsync(fd) == 0 else { throw KeychainStatus.writeFailure(errno) }
        let archived = files.nextRotatedPath()
        let fresh = files.freshPath
        unlink(fresh)
        let newFD = open(fresh, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard newFD >= 0 else { throw KeychainStatus.writeFailure(errno) }
        let (oldFD, oldSeq, oldHead, oldSize, oldCut, oldUnwritten) = (fd, seq, head, size, cutBytes, unwritten)
        let name = archived.split(separator: "/").last.map(String.init) ?? archived
        fd = newFD
        size = 0
        do {
            try appendLocked(AuditEvent.rotated.rawValue, nil) { line in
                line += "from=".utf8
                Self.appendEscaped(name, to: &line)
                line += " chain=".utf8
                Hex.append(oldHead, to: &line)
            }
            guard fsync(newFD) == 0 else { throw KeychainStatus.writeFailure(errno) }
            guard link(path, archived) == 0 else { throw KeychainStatus.writeFailure(errno) }
            guard rename(fresh, path) == 0 else {
                let e = errno
                unlink(archived)
                throw KeychainStatus.writeFailure(e)
            }
        } catch {
            close(newFD)
            unlink(fresh)
            // A cut left pending was the new file's: the old one goes on as it was.
            (fd, seq, head, size, cutBytes, unwritten) = (oldFD, oldSeq, oldHead, oldSize, oldCut, oldUnwritten)
            throw error
        }
        close(oldFD)
        return archived
    }

    /// Truncates the file back to its last whole line after a failed write (ftruncate);
    /// false when that failed too.
    private func cutPartialLine() -> Bool {
        guard cutBytes > 0 else { return true }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return false }
        // Shorter than the cut part: someone else truncated the file, and the part is gone.
        if st.st_size >= off_t(cutBytes) {
            guard ftruncate(fd, st.st_size - off_t(cutBytes)) == 0 else { return false }
        }
        cutBytes = 0
        return true
    }

    static func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var rest = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // up to 20 digits, most significant last
        var count = 0
        withUnsafeMutableBytes(of: &digits) { d in
            repeat {
                d[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0
            for i in stride(from: count - 1, through: 0, by: -1) { out.append(d[i]) }
        }
    }

    /// Makes every recorded line durable (on lock and stop).
    /// - Throws: `KeychainStatus.diskFull` or `.io` when pending counts or the fsync failed.
    func sync() throws {
        try flushRepeats()
        guard fsync(fd) == 0 else { throw KeychainStatus.writeFailure(errno) }
    }

    /// Checks the chain from the first line of the oldest file to the last of the current one.
    /// Returns the number of lines and files read, and the first bad line, if any.
    func verify() -> (lines: Int, files: Int, firstBad: AuditBreak?) {
        try? flushRepeats()  // counts that cannot be written yet stay pending
        var check = AuditChainCheck(key: key)
        let all = files.all()
        for (i, file) in all.enumerated() {
            guard let text = readSmallFile(file) else {
                if i == all.count - 1 { break }  // no current file yet: nothing written since
                return (check.lines, i + 1, AuditBreak(file: file, line: 1))
            }
            if let bad = check.check(text[...]) { return (check.lines, i + 1, AuditBreak(file: file, line: bad)) }
        }
        return (check.lines, all.count, nil)
    }

    /// The last line's number and chain value, for `status`.
    func headLine() -> (line: Int64, chain: String) {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        try? flushLocked()  // counts that cannot be written yet stay pending
        return (seq, Hex.encode(head))
    }

    /// The whole log's text, every file oldest first, for `keychainfs audit`. With `since`
    /// (Unix seconds), rotated files whose last line is older are not read.
    func contents(since: Int64? = nil) -> String {
        try? flushRepeats()  // counts that cannot be written yet stay pending
        let all = files.all()
        return all.enumerated().map { i, file in
            if let since, i < all.count - 1, let last = AuditFiles.lastTime(of: file), last < since { return "" }
            return readSmallFile(file) ?? ""
        }.joined()
    }

    /// Appends `s` as a field (`appendEscaped`), `-` when it is empty.
    static func appendClean(_ s: String, to out: inout [UInt8]) {
        if s.isEmpty { return out.append(UInt8(ascii: "-")) }
        appendEscaped(s, to: &out)
    }

    /// Appends `s` so that no field can forge a line or read as another text: a backslash as
    /// `\\`, a tab, newline or other control byte (below 0x20, and 0x7f) as `\x` and two
    /// lowercase hex digits (`\x09`, `\x0a`), every other byte as it is. So `\` always starts
    /// one of those two forms, and a path holding the text `\xa9999` (written `\\xa9999`) never
    /// reads like one holding a newline (`\x0a9999`).
    static func appendEscaped(_ s: String, to out: inout [UInt8]) {
        let backslash = UInt8(ascii: "\\")
        for b in s.utf8 {
            // Control characters are single bytes in UTF-8: no scalar decoding is needed.
            if b == backslash {
                out += [backslash, backslash]
            } else if b < 0x20 || b == 0x7f {
                out += [backslash, UInt8(ascii: "x")]
                Hex.append(CollectionOfOne(b), to: &out)
            } else {
                out.append(b)
            }
        }
    }

    static func unhex(_ s: String) -> [UInt8]? {
        guard s.utf8.count == 64 else { return nil }
        return Hex.decode(s)
    }
}
