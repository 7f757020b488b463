import Dispatch
import KeychainCore
import KeychainCrypto
import KeychainSystem
import KeychainfsAccess
import Synchronization

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
final class AuditLog: Sendable {
    let path: String
    private let key: SecureBytes
    /// The file, the chain and the counts of repeated opens: reached only with the lock held.
    private let writer: Locked<Writer>
    /// How long repeated opens are counted before their line is written.
    static let repeatWindow = 1.0
    private var files: AuditFiles { AuditFiles(path: path) }

    /// Hashes only numbers and the reference (this is looked up on every open); the event and
    /// executable are compared on a hit.
    fileprivate struct RepeatKey: Hashable {
        let uid: UInt32
        let pid: Int32
        let ref: PersistentRef
    }

    fileprivate struct Repeated {
        let event: AuditEvent
        let caller: CallerIdentity
        var count: Int
    }

    /// Opens (creating, mode 0600) the log and reads its last line to continue the chain.
    init(path: String, key: SecureBytes) {
        self.path = path
        self.key = key
        AuditFiles(path: path).recoverRotation()
        writer = Locked(Writer(path: path, key: key))
    }

    deinit { writer.withLock { w in try? w.fd?.close() } }

    /// Runs `body` on the writer with the lock held; a flush of repeated opens that it asked
    /// for is scheduled once the lock is let go.
    private func withWriter<R: Sendable>(_ body: (inout Writer) throws -> R) rethrows -> R {
        var schedule = false
        defer {
            if schedule {
                DispatchQueue.global().asyncAfter(deadline: .now() + Self.repeatWindow) { [self] in try? flushRepeats() }
            }
        }
        return try writer.withLock { w in
            defer { (schedule, w.flushWanted) = (w.flushWanted, false) }
            return try body(&w)
        }
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

    /// Appends one event about an item with `note` after its reference, escaped as every field is.
    /// - Throws: `KeychainStatus.diskFull` or `.io` when the line could not be written.
    func record(_ event: AuditEvent, caller: CallerIdentity?, item ref: PersistentRef, note: String) throws {
        try append(event.rawValue, caller) { line in
            Self.appendItem(ref, to: &line)
            line.append(UInt8(ascii: " "))
            Self.appendEscaped(note, to: &line)
        }
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
        try withWriter { try $0.recordRepeatable(event, caller: caller, item: ref) }
    }

    /// Writes the counts of repeated opens and starts counting afresh.
    /// - Throws: `KeychainStatus.diskFull` or `.io`; the counts not written stay pending.
    func flushRepeats() throws {
        try withWriter { try $0.flushRepeats() }
    }

    static func appendItem(_ ref: PersistentRef, to line: inout [UInt8]) {
        Hex.append(ref.itemClass.rawValue.utf8, to: &line)
        Hex.append(ref.uuid, to: &line)
    }

    private func append(_ event: String, _ caller: CallerIdentity?, detail: (inout [UInt8]) -> Void) throws {
        try withWriter { w in
            try w.append(event, caller, detail: detail)
            w.rotateIfFull()
        }
    }

    /// Sets the length past which the log moves to a new file (`audit-max-size`; 0: never).
    func setMaxSize(_ bytes: Int64) {
        withWriter { $0.maxSize = bytes }
    }

    /// Moves the current file aside as the next `VAULT.audit.N` and starts a new one whose
    /// first line, `rotated`, names that file and its last CHAIN and continues its chain.
    /// Returns the rotated file's path.
    /// - Throws: `KeychainStatus.diskFull` or `.io`; the log then goes on in the same file.
    func rotate() throws -> String {
        try withWriter { try $0.rotate() }
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
        try withWriter { w in
            try w.flushRepeats()
            guard let fd = w.fd else { throw KeychainStatus.io }
            try KeychainStatus.writing { () throws(Errno) in try fd.sync() }
        }
    }

    /// Checks the chain from the first line of the oldest file to the last of the current one.
    /// Returns the number of lines and files read, and the first bad line, if any.
    func verify() -> (lines: Int, files: Int, firstBad: AuditBreak?) {
        try? flushRepeats()  // counts that cannot be written yet stay pending
        var check = AuditChainCheck(key: key)
        let all = files.all()
        for (i, file) in all.enumerated() {
            guard let text = Self.text(of: file) else {
                if i == all.count - 1 { break }  // no current file yet: nothing written since
                return (check.lines, i + 1, AuditBreak(file: file, line: 1))
            }
            if let bad = check.check(text[...]) { return (check.lines, i + 1, AuditBreak(file: file, line: bad)) }
        }
        return (check.lines, all.count, nil)
    }

    /// The last line's number and chain value, for `status`.
    func headLine() -> (line: Int64, chain: String) {
        withWriter { w in
            try? w.flushRepeats()  // counts that cannot be written yet stay pending
            return (w.seq, Hex.encode(w.head))
        }
    }

    /// The whole log's text, every file oldest first, for `keychainfs audit`. With `since`
    /// (Unix seconds), rotated files whose last line is older are not read.
    func contents(since: Int64? = nil) -> String {
        try? flushRepeats()  // counts that cannot be written yet stay pending
        let all = files.all()
        return all.enumerated().map { i, file in
            if let since, i < all.count - 1, let last = AuditFiles.lastTime(of: file), last < since { return "" }
            return Self.text(of: file) ?? ""
        }.joined()
    }

    /// A whole file of the log as text; nil when it cannot be read.
    private static func text(of file: String) -> String? {
        (try? FileSystem.contents(of: file, limit: .max)).map { String(decoding: $0, as: UTF8.self) }
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
        // Most fields (paths, names, numbers) hold nothing to escape: one copy of their bytes.
        let copied = s.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard !bytes.contains(where: needsEscape) else { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if copied == true { return }
        let backslash = UInt8(ascii: "\\")
        for b in s.utf8 {
            // Control characters are single bytes in UTF-8: no scalar decoding is needed.
            if b == backslash {
                out += [backslash, backslash]
            } else if needsEscape(b) {
                out += [backslash, UInt8(ascii: "x")]
                Hex.append(CollectionOfOne(b), to: &out)
            } else {
                out.append(b)
            }
        }
    }

    /// A byte `appendEscaped` writes in another form.
    private static func needsEscape(_ b: UInt8) -> Bool { b == UInt8(ascii: "\\") || b < 0x20 || b == 0x7f }

    static func unhex(_ s: String) -> [UInt8]? {
        guard s.utf8.count == 64 else { return nil }
        return Hex.decode(s)
    }
}

/// What the log's lock guards: the open file, the chain's last SEQ and CHAIN, and the counts
/// of repeated opens. Its methods run with the lock held.
private struct Writer: Sendable {
    let path: String
    let key: SecureBytes
    /// nil when the log could not be opened: every line fails (errSecIO), nothing is served unlogged.
    var fd: FileDescriptor?
    var seq: Int64 = 0
    var head = [UInt8](repeating: 0, count: 32)
    /// The line being built; kept between records so recording allocates nothing.
    var line: [UInt8] = []
    /// Repeated opens counted since the last `flushRepeats`, by process and item.
    var repeats: [AuditLog.RepeatKey: AuditLog.Repeated] = [:]
    var flushScheduled = false
    /// A flush is to be scheduled once the lock is let go (`AuditLog.withWriter`).
    var flushWanted = false
    /// The last line could not be written: opens are not counted unseen until one is.
    var unwritten = false
    /// The end of the file that is part of a failed line and could not be cut off yet.
    var cutBytes = 0
    /// The current file's length, as written by this log.
    var size: Int64 = 0
    /// The length past which a line starts a new file (`audit-max-size`); 0 never rotates.
    var maxSize: Int64 = 0
    var rotating = false

    init(path: String, key: SecureBytes) {
        self.path = path
        self.key = key
        line.reserveCapacity(512)
        fd = try? FileDescriptor.open(path, .writeOnly, options: [.append, .create, .noFollow], permissions: .ownerReadWrite)
        if let fd { continueChain(fd) }
    }

    /// Only the end of the file matters: the last whole line continues the chain, and half a
    /// line after it (a crash mid-write) chains nowhere, so it is cut off (now, or before the
    /// next line if the cut fails). A tail that cannot be read leaves the log unwritable
    /// rather than restart the chain after lines it cannot see.
    private mutating func continueChain(_ fd: FileDescriptor) {
        guard let status = try? fd.status() else { return unusable() }
        guard status.size > 0 else { return }
        size = status.size
        let fileSize = Int(status.size)
        let tailLength = min(fileSize, 64 * 1024)
        guard let reader = try? FileDescriptor.open(path, .readOnly, options: .noFollow) else { return unusable() }
        defer { try? reader.close() }
        var tail = [UInt8](repeating: 0, count: tailLength)
        let read = tail.withUnsafeMutableBytes { try? reader.read(fromAbsoluteOffset: Int64(fileSize - tailLength), into: $0) }
        guard read == tailLength else { return unusable() }
        guard let lastNewline = tail.lastIndex(of: 10) else {
            // Not one whole line: the first line was cut, and the chain starts afresh.
            if tailLength == fileSize {
                cutBytes = fileSize
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
        if fields.count == 8, let n = Int64(fields[0]), let h = AuditLog.unhex(String(fields[7])) {
            seq = n
            head = h
        }
    }

    private mutating func unusable() {
        try? fd?.close()
        fd = nil
    }

    mutating func recordRepeatable(_ event: AuditEvent, caller: CallerIdentity, item ref: PersistentRef) throws {
        let key = AuditLog.RepeatKey(uid: caller.uid, pid: caller.pid, ref: ref)
        // After a failed line, the pending counts go first, then this open needs a line of its own.
        if unwritten { try flushRepeats() }
        // One look-up for the common case, a count kept going.
        if !unwritten, let i = repeats.index(forKey: key), repeats.values[i].event == event,
           repeats.values[i].caller.executable == caller.executable {
            repeats.values[i].count += 1
            return
        }
        // Another program under a reused pid, or another event: the old count is written first.
        if let other = repeats[key] {
            try appendRepeated(key.ref, other)
            repeats[key] = nil
        }
        try append(event.rawValue, caller) { AuditLog.appendItem(ref, to: &$0) }
        repeats[key] = AuditLog.Repeated(event: event, caller: caller, count: 0)
        scheduleFlush()
        rotateIfFull()
    }

    mutating func flushRepeats() throws {
        flushScheduled = false
        // Whatever could not be written is tried again a second later.
        defer { if repeats.values.contains(where: { $0.count > 0 }) { scheduleFlush() } }
        for (key, seen) in repeats {
            try appendRepeated(key.ref, seen)
            repeats[key] = nil
        }
    }

    private mutating func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        flushWanted = true
    }

    private mutating func appendRepeated(_ ref: PersistentRef, _ seen: AuditLog.Repeated) throws {
        guard seen.count > 0 else { return }
        try append(seen.event.repeated, seen.caller) { line in
            AuditLog.appendItem(ref, to: &line)
            line += " count=".utf8
            AuditLog.appendDecimal(Int64(seen.count), to: &line)
        }
    }

    /// Builds a line in one reused buffer and hashes it in place: the mount records every file
    /// open before answering it, so a line must cost little. SEQ and CHAIN advance only once
    /// the whole line is in the file.
    mutating func append(_ event: String, _ caller: CallerIdentity?, detail: (inout [UInt8]) -> Void) throws {
        if let failure = cutPartialLine() {
            unwritten = true
            throw KeychainStatus.writeFailure(failure)
        }
        let tab = UInt8(ascii: "\t")
        let nextSeq = seq + 1
        var nextHead = head
        line.removeAll(keepingCapacity: true)
        AuditLog.appendDecimal(nextSeq, to: &line); line.append(tab)
        AuditLog.appendDecimal(SystemClock.realtime().seconds, to: &line); line.append(tab)
        if let caller { AuditLog.appendDecimal(Int64(caller.uid), to: &line) } else { line.append(UInt8(ascii: "-")) }
        line.append(tab)
        if let caller { AuditLog.appendDecimal(Int64(caller.pid), to: &line) } else { line.append(UInt8(ascii: "-")) }
        line.append(tab)
        AuditLog.appendClean(event, to: &line); line.append(tab)
        detail(&line); line.append(tab)
        AuditLog.appendClean(caller?.executable ?? "-", to: &line)
        line.withUnsafeBytes { KeyedHash.extend(&nextHead, with: $0, key: key) }
        line.append(tab)
        Hex.append(nextHead, to: &line)
        line.append(UInt8(ascii: "\n"))
        let fd = self.fd
        var done = 0
        while done < line.count {
            let written = line.withUnsafeBytes { b in
                Result { () throws(Errno) in
                    guard let fd else { throw Errno.badDescriptor }
                    return try fd.write(UnsafeRawBufferPointer(rebasing: b[done...]))
                }
            }
            let failure: Errno
            switch written {
            case .success(let n) where n > 0:
                done += n
                continue
            case .success:
                failure = .ioError
            case .failure(let e):
                failure = e
            }
            // Half a line would chain nowhere and hide every line after it: cut it off now
            // (or before the next line, if even that fails).
            cutBytes = done
            _ = cutPartialLine()
            unwritten = true
            throw KeychainStatus.writeFailure(failure)
        }
        seq = nextSeq
        head = nextHead
        unwritten = false
        size += Int64(line.count)
    }

    /// Rotates once the file has reached `maxSize`, after a whole record (never between the
    /// lines of one flush). The lines are in the file either way: a rotation that fails is
    /// tried again after the next line.
    mutating func rotateIfFull() {
        if maxSize > 0, size >= maxSize, !rotating { _ = try? rotate() }
    }

    /// The new file gets its first line before it takes the current one's place, so at every
    /// moment `VAULT.audit` holds a whole log that continues the chain (a crash in between is
    /// undone at the next start: `AuditFiles.recoverRotation`).
    mutating func rotate() throws -> String {
        rotating = true
        defer { rotating = false }
        try flushRepeats()
        guard let oldFD = fd else { throw KeychainStatus.io }
        try KeychainStatus.writing { () throws(Errno) in try oldFD.sync() }
        let files = AuditFiles(path: path)
        let archived = files.nextRotatedPath()
        let fresh = files.freshPath
        try? FileSystem.remove(fresh)
        let newFD = try KeychainStatus.writing { () throws(Errno) in
            try FileDescriptor.open(fresh, .writeOnly, options: [.append, .create, .exclusiveCreate, .noFollow],
                                    permissions: .ownerReadWrite)
        }
        let (oldSeq, oldHead, oldSize, oldCut, oldUnwritten) = (seq, head, size, cutBytes, unwritten)
        let name = archived.split(separator: "/").last.map(String.init) ?? archived
        fd = newFD
        size = 0
        do {
            try append(AuditEvent.rotated.rawValue, nil) { line in
                line += "from=".utf8
                AuditLog.appendEscaped(name, to: &line)
                line += " chain=".utf8
                Hex.append(oldHead, to: &line)
            }
            try KeychainStatus.writing { () throws(Errno) in
                try newFD.sync()
                try FileSystem.link(path, as: archived)
                do throws(Errno) { try FileSystem.rename(fresh, to: path) } catch {
                    try? FileSystem.remove(archived)
                    throw error
                }
            }
        } catch {
            try? newFD.close()
            try? FileSystem.remove(fresh)
            // A cut left pending was the new file's: the old one goes on as it was.
            (fd, seq, head, size, cutBytes, unwritten) = (Optional(oldFD), oldSeq, oldHead, oldSize, oldCut, oldUnwritten)
            throw error
        }
        try? oldFD.close()
        return archived
    }

    /// Truncates the file back to its last whole line after a failed write (ftruncate);
    /// returns why when that failed too.
    mutating func cutPartialLine() -> Errno? {
        guard cutBytes > 0 else { return nil }
        do throws(Errno) {
            guard let fd else { throw Errno.badDescriptor }
            let length = try fd.status().size
            // Shorter than the cut part: someone else truncated the file, and the part is gone.
            if length >= Int64(cutBytes) { try fd.truncate(toLength: length - Int64(cutBytes)) }
        } catch {
            return error
        }
        cutBytes = 0
        return nil
    }
}
