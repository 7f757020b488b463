import KeychainCore
import KeychainSystem
import Synchronization

/// One LISTEN connection per server for all the engines of a process (docs/sync.md,
/// "Connections"): a thread of its own waits on it and wakes the engines of each circle the
/// server notifies. So a process that syncs many vaults holds one listening backend, not one
/// per vault. The thread starts with the first engine that listens and ends with the last.
public final class SyncWaker: Sendable {
    /// The waker of this process's engines; it also closes the idle connections of `pool`.
    public static let process = SyncWaker(closingIdleOf: .process)

    private let wanted = Mutex(Wanted())
    private let pipe = WakePipe()
    private let pool: SyncServerPool?
    private static let nextID = Atomic<UInt64>(1)

    private struct Wanted {
        /// connection string → channel → engine → what wakes it.
        var engines: [String: [String: [UInt64: @Sendable () -> Void]]] = [:]
        var running = false
    }

    /// - Parameter pool: a pool whose idle connections this thread closes.
    public init(closingIdleOf pool: SyncServerPool? = nil) {
        self.pool = pool
    }

    /// An engine's name in `listen` and `forget`.
    static func newID() -> UInt64 { nextID.add(1, ordering: .relaxed).oldValue }

    /// Wakes `engine` (calls `wake`) whenever `channel` is notified on the server of
    /// `conninfo`, and once after the listening connection was lost and made again (what was
    /// sent meanwhile is not heard). Replaces what `engine` listened to before. Cheap when
    /// nothing changed: a round calls it each time.
    func listen(conninfo: String, channel: String, engine: UInt64, wake: @escaping @Sendable () -> Void) {
        let changed = wanted.withLock { w -> Bool in
            if w.engines[conninfo]?[channel]?[engine] != nil { return false }
            Self.remove(engine, from: &w)
            w.engines[conninfo, default: [:]][channel, default: [:]][engine] = wake
            return true
        }
        if changed { startOrPoke() }
    }

    /// Stops waking `engine` (it left its circle, or stopped).
    func forget(engine: UInt64) {
        let changed = wanted.withLock { Self.remove(engine, from: &$0) }
        if changed { pipe.poke() }
    }

    @discardableResult
    private static func remove(_ engine: UInt64, from w: inout Wanted) -> Bool {
        var found = false
        for (conninfo, channels) in w.engines {
            for (channel, engines) in channels where engines[engine] != nil {
                w.engines[conninfo]![channel]![engine] = nil
                found = true
                if w.engines[conninfo]![channel]!.isEmpty { w.engines[conninfo]![channel] = nil }
            }
            if w.engines[conninfo]!.isEmpty { w.engines[conninfo] = nil }
        }
        return found
    }

    private func startOrPoke() {
        let start = wanted.withLock { w -> Bool in
            defer { w.running = true }
            return !w.running
        }
        guard start else { return pipe.poke() }
        do {
            try SystemThread.detach { [self] in
                run()
            }
        } catch {
            wanted.withLock { $0.running = false }  // the rounds every 2 s still come
        }
    }

    /// One server's listening connection, touched by the waker's thread only.
    private struct Link {
        var connection: PGConnection?
        var listened: Set<String> = []
        var lastAttempt = -Double.infinity
        var wasConnected = false
    }

    private func run() {
        var links: [String: Link] = [:]
        while true {
            let want: [String: Set<String>]? = wanted.withLock { w in
                if w.engines.isEmpty { w.running = false; return nil }
                return w.engines.mapValues { Set($0.keys) }
            }
            guard let want else { return }  // the last engine went: the connections close with `links`
            links = links.filter { want[$0.key] != nil }
            var reconnected: [String] = []
            for (conninfo, channels) in want {
                var link = links[conninfo] ?? Link()
                if link.connection?.isOK != true {
                    link.connection = nil
                    // A server that is down is tried again every 2 s, as the rounds are.
                    if monotonicSeconds() - link.lastAttempt >= 2 {
                        link.lastAttempt = monotonicSeconds()
                        link.connection = try? PGConnection(conninfo: conninfo)
                        link.listened = []
                        if link.connection != nil {
                            if link.wasConnected { reconnected.append(conninfo) }
                            link.wasConnected = true
                        }
                    }
                }
                if let c = link.connection {
                    do {
                        for channel in channels.subtracting(link.listened) {
                            try c.exec("LISTEN \"\(channel)\"")
                            link.listened.insert(channel)
                        }
                        for channel in link.listened.subtracting(channels) {
                            try c.exec("UNLISTEN \"\(channel)\"")
                            link.listened.remove(channel)
                        }
                    } catch {
                        link.connection = nil
                    }
                }
                links[conninfo] = link
            }
            Poll.waitUntilAnyReadable([pipe.readEnd] + links.values.compactMap { $0.connection?.socket }, timeoutMilliseconds: 1000)
            pipe.drain()
            // A LISTEN above may have read notifications into libpq's queue: every link is read.
            var notified: [(String, String)] = []
            for (conninfo, var link) in links {
                guard let c = link.connection else { continue }
                do {
                    notified += try c.notifications().map { (conninfo, $0) }
                } catch {
                    link.connection = nil
                    links[conninfo] = link
                }
            }
            let wakes: [@Sendable () -> Void] = wanted.withLock { w in
                var out: [UInt64: @Sendable () -> Void] = [:]
                for (conninfo, channel) in notified { out.merge(w.engines[conninfo]?[channel] ?? [:]) { a, _ in a } }
                for conninfo in reconnected {
                    for engines in (w.engines[conninfo] ?? [:]).values { out.merge(engines) { a, _ in a } }
                }
                return Array(out.values)
            }
            for wake in wakes { wake() }
            pool?.closeIdle()
        }
    }
}
