import KeychainCore
import KeychainCrypto
import Synchronization

/// What an open file's descriptor holds; one state at a time, so "opened for writing" is a
/// case, not a buffer that happens to be there.
enum OpenFileContents {
    /// A read-only descriptor: the version of the item decrypted at open (nil: empty).
    case reading(SecureBytes?)
    /// A descriptor open for writing, with what it wrote and has yet to store.
    case writing(PendingWrite)
    /// The vault locked under it (WhenUnlocked items): it reads and writes nothing from then
    /// on, even after an unlock, and what it wrote is dropped, not stored.
    case revoked
    /// Its writer was killed by a signal (seen at a FLUSH): it stores nothing more.
    case abandoned
    /// Released, or dropped before its open finished: it holds nothing.
    case closed
}

/// A writer's bytes: they stay here until a commit stores them (docs/filesystem.md, Writing):
/// nobody else sees them before, and a writer killed by a signal never stores them.
struct PendingWrite {
    /// Bytes written so far; the first `length` of them are meaningful.
    var buffer: SecureBytes
    var length = 0
    /// Bytes were written (or cut) through this descriptor since its last commit: a FLUSH stores them.
    var dirty = false
    /// Something is not stored yet, an O_TRUNC open's emptying included: the RELEASE stores it.
    var pending = false
    /// Writes so far, so that a commit clears `dirty` only if no write came in meanwhile.
    var writes = 0
    /// The threads that wrote since the last commit, and their processes: only their FLUSH
    /// stores, so a child that closes the descriptor it inherited stores nothing.
    var writerThreads: Set<Int32> = []
    var writerProcesses: Set<Int32> = []
}

/// An open file: one version of one item for its whole life, or a pending write.
///
/// `contents` is guarded by the file's own lock (`withContentLock`), so a read answers from it
/// without holding the server's mutex through its reply; the other fields are guarded by the
/// server's mutex. The file's lock is taken after the server's, never before.
final class OpenFile {
    var node: Node
    var ref: PersistentRef?
    let protection: ProtectionClass
    let groups: [String]
    private(set) var contents: OpenFileContents = .reading(nil)
    /// The entry at open, for `fstat` on a descriptor whose item has since locked.
    var openedEntry: FileEntry?
    /// When a create made this file; with `ref` nil it is stored at its first commit.
    var createdAt = 0
    /// Where the written buffer's guarded memory is counted, and for whom (writers only).
    var budget: WriteBudget?
    var writerUID: UInt32 = 0
    private var charged = 0

    /// Held in the object itself: one allocation less on every open. It guards `contents` and
    /// `charged`, which stay outside it because the mount server reads and changes them
    /// through this object's methods within one `withContentLock`.
    private let contentLock = Mutex(())

    init(node: Node, ref: PersistentRef?, protection: ProtectionClass, groups: [String]) {
        self.node = node
        self.ref = ref
        self.protection = protection
        self.groups = groups
    }

    deinit {
        // A file dropped without a close (a failed create) still gives its share back.
        budget?.release(charged, uid: writerUID)
    }

    func withContentLock<R>(_ body: () throws -> R) rethrows -> R {
        try contentLock.withLock { _ in try body() }
    }

    /// Opened for writing, and neither revoked nor abandoned since (under the file's lock once shared).
    var isWriting: Bool {
        if case .writing = contents { return true }
        return false
    }

    var isRevoked: Bool {
        if case .revoked = contents { return true }
        return false
    }

    /// Sets what a read-only open decrypted, before the file is shared.
    func setSnapshot(_ bytes: SecureBytes?) { contents = .reading(bytes) }

    /// Turns the descriptor into a writer holding a copy of what it read (nothing for
    /// O_TRUNC and creates, which are then pending: their emptying is stored at the close).
    /// False, changing nothing, when the writers' memory budget has no room.
    /// - Throws: `CryptoError.allocationFailed`.
    func startWriting() throws -> Bool {
        let snapshot: SecureBytes?
        if case .reading(let s) = contents { snapshot = s } else { snapshot = nil }
        let size = snapshot?.count ?? 0
        guard let buffer = try allocate(size, keeping: nil) else { return false }
        var write = PendingWrite(buffer: buffer)
        if let snapshot {
            snapshot.withUnsafeBytes { src in buffer.withUnsafeMutableBytes { if src.count > 0 { $0.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: src.count) } } }
            write.length = size
            snapshot.wipe()
        } else {
            write.pending = true
        }
        contents = .writing(write)
        return true
    }

    /// Runs `body` on the pending write; nil when the descriptor is not writing (under the
    /// file's lock once shared).
    func withWrite<R>(_ body: (inout PendingWrite) throws -> R) rethrows -> R? {
        guard case .writing(var write) = contents else { return nil }
        contents = .closed  // `write` is the only holder while it changes: no copy of its sets
        defer { contents = .writing(write) }
        return try body(&write)
    }

    func revoke() { withContentLock { drop(as: .revoked) } }

    func wipe() { withContentLock { drop(as: .closed) } }

    /// Drops what a killed writer left: nothing of it is stored.
    func abandon() { withContentLock { drop(as: .abandoned) } }

    private func drop(as state: OpenFileContents) {
        // A snapshot is wiped when its last holder lets go (SecureBytes wipes on deinit): at
        // once, or just after a read that is answering from it.
        if case .writing(let write) = contents { write.buffer.wipe() }
        contents = state
        budget?.release(charged, uid: writerUID)
        charged = 0
    }

    /// Makes room in `write` for `count` bytes, keeping what is there. False, changing
    /// nothing, when the writers' memory budget has no room for them.
    /// - Throws: `CryptoError.allocationFailed`, leaving the buffer and the budget as they were.
    func reserve(_ count: Int, in write: inout PendingWrite) throws -> Bool {
        guard count > write.buffer.count else { return true }
        guard let bigger = try allocate(count, keeping: write) else { return false }
        write.buffer.wipe()
        write.buffer = bigger
        return true
    }

    /// A buffer of at least `count` bytes holding `old`'s meaningful bytes, charged to the
    /// budget; nil when the budget has no room.
    private func allocate(_ count: Int, keeping old: PendingWrite?) throws -> SecureBytes? {
        let current = old?.buffer.count ?? -1
        // Doubling, but never past the largest secret: slots up to 1 MiB are pooled.
        var size = max(count, min(max(current * 2, 64), ItemLimits.maximumSecretLength))
        let before = charged
        if let budget {
            if !budget.charge(size - charged, uid: writerUID) {
                guard size > count, budget.charge(count - charged, uid: writerUID) else { return nil }
                size = count
            }
            charged = size
        }
        let bigger: SecureBytes
        do {
            bigger = try SecureBytes(count: size)
        } catch {
            budget?.release(charged - before, uid: writerUID)
            charged = before
            throw error
        }
        if let old, old.length > 0 {
            old.buffer.withUnsafeBytes { src in bigger.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: old.length) } }
        }
        return bigger
    }

    /// The bytes a read sees: the written buffer, else the snapshot.
    func withContents<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch contents {
        case .writing(let write): return try write.buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<write.length])) }
        case .reading(let snapshot?): return try snapshot.withUnsafeBytes(body)
        default: return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    /// The size `stat` shows for a file not stored yet.
    var writtenLength: Int {
        if case .writing(let write) = contents { return write.length }
        return 0
    }
}
