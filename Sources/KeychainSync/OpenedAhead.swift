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
final class OpenedAhead: @unchecked Sendable {
    // Unchecked: `opened` is written by the worker before `done` turns true, and read after.
    private struct Opened {
        var signKey: [UInt8]
        var epoch: UInt32
        var uuid: [UInt8]
        var payload: SyncPayload?
        var prepared: PreparedSync
    }

    private var opened: [Int64: Opened] = [:]
    private let done = ConditionLock(false)

    /// Starts opening `entries` on `thread`, whose writers are looked up in `config` as it is
    /// now; with no thread, each entry is opened in order as without this.
    init(_ entries: [SyncServer.LogEntry], on thread: SerialThread?, circle: CircleKeys, config: SyncConfig, vault: Vault) {
        let started = thread?.run { [self] in
            var out: [Int64: Opened] = [:]
            out.reserveCapacity(entries.count)
            var order: [Int64] = [], changes: [SyncChange] = []
            for e in entries where e.length <= SyncRecord.maximumLength {
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
            opened = out
            done.withLockWakingWaiters { $0 = true }
        }
        if started != true { done.withLock { $0 = true } }  // nothing opened here: `take` gives nil
    }

    deinit {
        for o in opened.values { o.payload?.wipe() }
    }

    /// What `SyncRecord.open` gave for the entry at `seq` with this writer's key and epoch;
    /// nil when it was not opened so (the caller opens it). Waits for the worker. Taken once.
    func take(_ seq: Int64, signKey: [UInt8], epoch: UInt32) -> (uuid: [UInt8], payload: SyncPayload?, prepared: PreparedSync)? {
        waitDone()
        guard let o = opened.removeValue(forKey: seq) else { return nil }
        guard o.signKey == signKey, o.epoch == epoch else {
            o.payload?.wipe()
            return nil
        }
        return (o.uuid, o.payload, o.prepared)
    }

    /// The items of the entries opened here (the uuids whose sync state the batch needs).
    /// Waits for the worker.
    var uuids: [[UInt8]] {
        waitDone()
        return opened.values.map(\.uuid)
    }

    private func waitDone() { done.wait { $0 ? .done(()) : .wait } }
}
