import Glibc
import KeychainSystem
import KeychainfsAccess
import KeychainCore
import KeychainProtocol
import Synchronization

/// The open `watch` connections. The hub owns each one's descriptor from `adopt` on: it writes
/// events without ever blocking (a small queue per watcher), notices on a thread of its own when
/// the peer closes, and closes the descriptor itself. A watcher that stops reading delays nobody:
/// once its queue is full it gets one `overflow` event and is closed.
final class EventHub: Sendable {
    /// Watchers one uid may hold at once; administrators count too, but only toward their own.
    static let watchersPerUID = 16
    /// Watchers of all other users together, so that they cannot exhaust descriptors.
    static let watchersInTotal = 256
    /// Frames queued for a watcher whose socket buffer is full, before it overflows.
    static let queuedFrames = 256
    /// How long an overflowed watcher has to read its `overflow` event before it is closed.
    static let overflowGrace = 5.0

    fileprivate struct Watcher: Sendable {
        let fd: Int32
        let caller: CallerIdentity
        let administrator: Bool
        let service: String?
        let account: String?
        /// Frames not yet sent in full; `sentOfFirst` bytes of the first are out.
        var pending: [[UInt8]] = []
        var sentOfFirst = 0
        /// Set on overflow: nothing more is queued, and the descriptor closes once the
        /// `overflow` frame is out or at this time, whichever comes first.
        var closeBy: Double?

        var filtered: Bool { service != nil || account != nil }
    }

    /// The watchers and the poll thread's wake-up pipe, reached only with the lock held.
    private let hub = Mutex(Hub())

    /// Whether `caller` may start one more watch now.
    func hasRoom(for caller: CallerIdentity, administrator: Bool) -> Bool {
        hub.withLock { $0.hasRoom(for: caller, administrator: administrator) }
    }

    /// Takes over `fd`, a connection that has been told its watch started: from now on only the
    /// hub reads, writes or closes it. Over the caller's limit it is closed at once (false).
    @discardableResult
    func adopt(fd: Int32, caller: CallerIdentity, administrator: Bool, service: String?, account: String?) -> Bool {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        let (taken, started) = hub.withLock { h -> (Bool, Bool) in
            let started = h.openWakePipe()
            guard h.wakeRead >= 0, h.hasRoom(for: caller, administrator: administrator) else { return (false, started) }
            h.watchers[fd] = Watcher(fd: fd, caller: caller, administrator: administrator, service: service, account: account)
            return (true, started)
        }
        if started { spawnThread("kcfs-watchers") { [self] in pollLoop() } }
        if taken { wake() } else { close(fd) }
        return taken
    }

    /// Queues `event` for every watcher that may see it and sends what the sockets take now.
    /// `entitled` gives a caller's access groups as they are now.
    func publish(_ event: ChangeEvent, entitled: (CallerIdentity) -> [String] = { _ in [] }) {
        var frames: [Bool: [UInt8]] = [:]
        func frame(names: Bool) -> [UInt8]? {
            if let f = frames[names] { return f }
            let f = Self.frame(event.watchEvent(withNames: names).response)
            frames[names] = f
            return f
        }
        let needsPoll = hub.withLock { h -> Bool in
            var waiting = false
            for fd in Array(h.watchers.keys) {
                guard let w = h.watchers[fd], w.closeBy == nil else { continue }
                // A filtered watcher gets events of its service (and account); events that name
                // nothing (a lock, a broad delete) go to everyone who may see them.
                if let s = w.service, let es = event.service, s != es { continue }
                if let a = w.account, let ea = event.account, a != ea { continue }
                if !w.administrator && !event.isVisible(toGroups: entitled(w.caller), filtered: w.filtered) { continue }
                if w.pending.count >= Self.queuedFrames {
                    h.overflow(fd)
                } else {
                    // Out of guarded memory to encode it: this event is not sent.
                    guard let f = frame(names: w.administrator) else { continue }
                    h.watchers[fd]!.pending.append(f)
                    h.flush(fd)
                }
                if h.watchers[fd]?.pending.isEmpty == false { waiting = true }
            }
            return waiting
        }
        if needsPoll { wake() }
    }

    /// An event as a frame's bytes (events hold names, never a secret); nil when it cannot be
    /// encoded for want of guarded memory.
    static func frame(_ response: Response) -> [UInt8]? {
        guard let encoded = try? response.encoded() else { return nil }
        defer { encoded.wipe() }
        let n = UInt32(encoded.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)]
            + encoded.withUnsafeBytes { Array($0) }
    }

    private func wake() {
        let fd = hub.withLock { $0.wakeWrite }
        var byte: UInt8 = 1
        _ = Glibc.write(fd, &byte, 1)  // a full pipe already means "wake up"
    }

    /// Waits for peers that close, send, or can take more bytes, and for overflow deadlines.
    private func pollLoop() {
        var scratch = [UInt8](repeating: 0, count: 512)
        while true {
            let (set, timeout) = hub.withLock { h -> ([pollfd], Int32) in
                for fd in h.closing { close(fd) }
                h.closing.removeAll()
                var set = [pollfd(fd: h.wakeRead, events: Int16(POLLIN), revents: 0)]
                var nearest = Double.infinity
                for w in h.watchers.values {
                    set.append(pollfd(fd: w.fd, events: Int16(POLLIN) | (w.pending.isEmpty ? 0 : Int16(POLLOUT)), revents: 0))
                    if let t = w.closeBy { nearest = min(nearest, t) }
                }
                let wait = nearest == .infinity ? -1 : Int32(max(0, min(60_000, (nearest - monotonicSeconds()) * 1000 + 1)))
                return (set, wait)
            }
            var polled = set
            let n = poll(&polled, nfds_t(polled.count), timeout)
            if n < 0 && errno != EINTR { usleep(10_000) }
            if polled[0].revents != 0 {
                while scratch.withUnsafeMutableBytes({ Glibc.read(polled[0].fd, $0.baseAddress, $0.count) }) > 0 {}
            }
            hub.withLock { h in
                for p in polled.dropFirst() where p.revents != 0 {
                    guard h.watchers[p.fd] != nil else { continue }
                    if p.revents & Int16(POLLIN) != 0 {
                        // A watch connection sends nothing more: read and discard, 0 is the end.
                        let got = scratch.withUnsafeMutableBytes { recv(p.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                        if got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR) { h.drop(p.fd); continue }
                    }
                    if p.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 { h.drop(p.fd); continue }
                    if p.revents & Int16(POLLOUT) != 0 { h.flush(p.fd) }
                }
                let now = monotonicSeconds()
                for (fd, w) in h.watchers where (w.closeBy ?? .infinity) <= now { h.drop(fd) }
            }
        }
    }
}

/// What the hub's lock guards: the watchers by descriptor, the descriptors the poll thread is
/// to close, and its wake-up pipe. Its methods run with the lock held.
private struct Hub: Sendable {
    var watchers: [Int32: EventHub.Watcher] = [:]
    /// Descriptors dropped since the poll thread last ran: it closes them, so a number the
    /// kernel reuses is never one it is still polling.
    var closing: [Int32] = []
    var wakeRead: Int32 = -1
    var wakeWrite: Int32 = -1

    func hasRoom(for caller: CallerIdentity, administrator: Bool) -> Bool {
        var mine = 0, others = 0
        for w in watchers.values {
            if w.caller.uid == caller.uid { mine += 1 }
            if !w.administrator { others += 1 }
        }
        return mine < EventHub.watchersPerUID && (administrator || others < EventHub.watchersInTotal)
    }

    /// Makes the wake-up pipe when there is none yet; true when it was made now (the poll
    /// thread is to start).
    mutating func openWakePipe() -> Bool {
        guard wakeRead < 0 else { return false }
        var pair: [Int32] = [-1, -1]
        guard pipe(&pair) == 0 else { return false }
        for fd in pair {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = pair[0]
        wakeWrite = pair[1]
        return true
    }

    /// Drops what is queued but not begun, and queues the last frame the watcher gets.
    mutating func overflow(_ fd: Int32) {
        guard watchers[fd] != nil else { return }
        if watchers[fd]!.sentOfFirst > 0 { watchers[fd]!.pending.removeSubrange(1...) } else { watchers[fd]!.pending.removeAll() }
        if let last = EventHub.frame(WatchEvent(kind: WatchEvent.overflow, time: Int64(Glibc.time(nil))).response) {
            watchers[fd]!.pending.append(last)
        }
        watchers[fd]!.closeBy = monotonicSeconds() + EventHub.overflowGrace
        flush(fd)
    }

    /// Sends queued frames until the socket would block.
    mutating func flush(_ fd: Int32) {
        while let first = watchers[fd]?.pending.first {
            let sent = watchers[fd]!.sentOfFirst
            let n = first.withUnsafeBytes { b in
                retryingOnInterrupt { send(fd, b.baseAddress! + sent, b.count - sent, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { return }
                return drop(fd)
            }
            watchers[fd]!.sentOfFirst += n
            if watchers[fd]!.sentOfFirst == first.count {
                watchers[fd]!.pending.removeFirst()
                watchers[fd]!.sentOfFirst = 0
            }
        }
        if watchers[fd]?.closeBy != nil { drop(fd) }  // the overflow event is out
    }

    mutating func drop(_ fd: Int32) {
        guard watchers.removeValue(forKey: fd) != nil else { return }
        shutdown(fd, Int32(SHUT_RDWR))  // the peer sees the end now; the number is freed by the poll thread
        closing.append(fd)
    }
}
