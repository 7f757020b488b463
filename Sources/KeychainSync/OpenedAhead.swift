import KeychainCore
import KeychainSystem

/// The signatures and ciphertexts of the next batch of a long read (a new host's first sync),
/// checked and opened on a thread of its own while this batch is written to the vault: the
/// two halves of each entry's work on two CPUs. `SyncRecord.open` runs here exactly as it does
/// in `openEntry`, and then `Vault.prepareSynced` (the payload decoded and checked, sealed for
/// this vault, its index tokens); every other check of an entry (its row, epoch, writer, its
/// sync state) is still made in log order, which then takes what was opened here, or opens the
/// entry itself when this did not (a writer learned since, an epoch adopted since, a failure
/// to report). The write, under the vault's lock, uses the sealed item only if the keys it was
/// sealed with are still the vault's.
///
/// Opening costs more CPU than writing (the Ed25519 check of each entry), so the writing thread,
/// done with its batch before this one is opened, opens the rest of it alongside the worker
/// instead of waiting: the batch is taken in chunks by whichever thread is free.
final class OpenedAhead: Sendable {
    /// Entries a thread takes at a time: small beside a batch (16,384), so both threads end
    /// together, and large beside the cost of taking them.
    static let chunkSize = 256

    private struct Opened: Sendable {
        var signKey: [UInt8]
        var epoch: UInt32
        var uuid: [UInt8]
        var payload: SyncPayload?
        var prepared: PreparedSync
    }

    private struct Work: Sendable {
        /// The first entry no thread has taken yet.
        var next = 0
        /// Chunks taken and not yet opened.
        var opening = 0
        var opened: [Int64: Opened] = [:]
    }

    private let entries: [SyncServer.LogEntry]
    private let circle: CircleKeys
    private let config: SyncConfig
    private let vault: Vault
    private let work = ConditionLock(Work())

    /// Starts opening `entries` on `thread`, whose writers are looked up in `config` as it is
    /// now; with no thread, each entry is opened in order as without this.
    init(_ entries: [SyncServer.LogEntry], on thread: SerialThread?, circle: CircleKeys, config: SyncConfig, vault: Vault) {
        self.entries = entries
        self.circle = circle
        self.config = config
        self.vault = vault
        work.withLock { $0.opened.reserveCapacity(entries.count) }
        let started = thread?.run { [self] in openChunks() }
        if started != true { work.withLock { $0.next = entries.count } }  // nothing opened here: `take` gives nil
    }

    deinit {
        work.withLock { w in for o in w.opened.values { o.payload?.wipe() } }
    }

    /// What `SyncRecord.open` gave for the entry at `seq` with this writer's key and epoch;
    /// nil when it was not opened so (the caller opens it). Waits for the worker. Taken once.
    func take(_ seq: Int64, signKey: [UInt8], epoch: UInt32) -> (uuid: [UInt8], payload: SyncPayload?, prepared: PreparedSync)? {
        finish()
        guard let o = work.withLock({ $0.opened.removeValue(forKey: seq) }) else { return nil }
        guard o.signKey == signKey, o.epoch == epoch else {
            o.payload?.wipe()
            return nil
        }
        return (o.uuid, o.payload, o.prepared)
    }

    /// The items of the entries opened here (the uuids whose sync state the batch needs).
    /// Waits for the worker.
    var uuids: [[UInt8]] {
        finish()
        return work.withLock { $0.opened.values.map(\.uuid) }
    }

    /// Opens what no thread has taken yet on this one, then waits for the chunk the worker is on.
    private func finish() {
        openChunks()
        work.wait { $0.opening == 0 && $0.next >= entries.count ? .done(()) : .wait }
    }

    /// Takes chunks until none is left, each opened outside the lock.
    private func openChunks() {
        while true {
            let range = work.withLock { w -> Range<Int>? in
                guard w.next < entries.count else { return nil }
                let start = w.next
                w.next = min(start + Self.chunkSize, entries.count)
                w.opening += 1
                return start..<w.next
            }
            guard let range else { return }
            let chunk = open(entries[range])
            work.withLockWakingWaiters { w in
                w.opened.merge(chunk) { _, new in new }
                w.opening -= 1
            }
        }
    }

    private func open(_ slice: ArraySlice<SyncServer.LogEntry>) -> [Int64: Opened] {
        var out: [Int64: Opened] = [:]
        out.reserveCapacity(slice.count)
        var order: [Int64] = [], changes: [SyncChange] = []
        for e in slice where e.length <= SyncRecord.maximumLength {
            guard let header = try? SyncRecord.header(of: e.record), circle.key(for: header.epoch) != nil,
                  let writer = config.writer(header.writer, at: e.seq),
                  let (uuid, payload) = try? SyncRecord.open(e.record, circle: circle, writerSigningKey: writer.signKey,
                                                              expected: header) else { continue }
            out[e.seq] = Opened(signKey: writer.signKey, epoch: header.epoch, uuid: uuid, payload: payload, prepared: .none)
            if let payload {
                order.append(e.seq)
                changes.append(.write(payload, serverVersion: e.version))
            }
        }
        for (seq, prepared) in zip(order, vault.prepareSynced(changes)) { out[seq]?.prepared = prepared }
        return out
    }
}
