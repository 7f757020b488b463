import Glibc
import KeychainSystem
import KeychainfsAccess
import KeychainCore
import KeychainProtocol

/// The open `watch` connections. The hub owns each one's descriptor from `adopt` on: it writes
/// events without ever blocking (a small queue per watcher), notices on a thread of its own when
/// the peer closes, and closes the descriptor itself. A watcher that stops reading delays nobody:
/// once its queue is full it gets one `overflow` event and is closed.
final class EventHub: @unchecked Sendable {
    /// Watchers one uid may hold at once; administrators count too, but only toward their own.
    static let watchersPerUID = 16
    /// Watchers of all other users together, so that they cannot exhaust descriptors.
    static let watchersInTotal = 256
    /// Frames queued for a watcher whose socket buffer is full, before it overflows.
    static let queuedFrames = 256
    /// How long an overflowed watcher has to read its `overflow` event before it is closed.
    static let overflowGrace = 5.0

    private final class Watcher {
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

        init(fd: Int32, caller: CallerIdentity, administrator: Bool, service: String?, account: String?) {
            self.fd = fd
            self.caller = caller
            self.administrator = administrator
            self.service = service
            self.account = account
        }

        var filtered: Bool { service != nil || account != nil }
    }

    private let mutex = PThreadMutex()
    private var watchers: [Int32: Watcher] = [:]
    /// Descriptors dropped since the poll thread last ran: it closes them, so a number the
    /// kernel reuses is never one it is still polling.
    private var closing: [Int32] = []
    private var wakeRead: Int32 = -1
    private var wakeWrite: Int32 = -1

    /// Whether `caller` may start one more watch now.
    func hasRoom(for caller: CallerIdentity, administrator: Bool) -> Bool {
        mutex.withLock { roomLocked(for: caller, administrator: administrator) }
    }

    private func roomLocked(for caller: CallerIdentity, administrator: Bool) -> Bool {
        var mine = 0, others = 0
        for w in watchers.values {
            if w.caller.uid == caller.uid { mine += 1 }
            if !w.administrator { others += 1 }
        }
        return mine < Self.watchersPerUID && (administrator || others < Self.watchersInTotal)
    }

    /// Takes over `fd`, a connection that has been told its watch started: from now on only the
    /// hub reads, writes or closes it. Over the caller's limit it is closed at once (false).
    @discardableResult
    func adopt(fd: Int32, caller: CallerIdentity, administrator: Bool, service: String?, account: String?) -> Bool {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        let taken = mutex.withLock { () -> Bool in
            startLocked()
            guard wakeRead >= 0, roomLocked(for: caller, administrator: administrator) else { return false }
            watchers[fd] = Watcher(fd: fd, caller: caller, administrator: administrator, service: service, account: account)
            return true
        }
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
        let needsPoll = mutex.withLock { () -> Bool in
            var waiting = false
            for w in watchers.values where w.closeBy == nil {
                // A filtered watcher gets events of its service (and account); events that name
                // nothing (a lock, a broad delete) go to everyone who may see them.
                if let s = w.service, let es = event.service, s != es { continue }
                if let a = w.account, let ea = event.account, a != ea { continue }
                if !w.administrator && !event.isVisible(toGroups: entitled(w.caller), filtered: w.filtered) { continue }
                if w.pending.count >= Self.queuedFrames {
                    overflowLocked(w)
                } else {
                    // Out of guarded memory to encode it: this event is not sent.
                    guard let f = frame(names: w.administrator) else { continue }
                    w.pending.append(f)
                    flushLocked(w)
                }
                if watchers[w.fd] != nil && !w.pending.isEmpty { waiting = true }
            }
            return waiting
        }
        if needsPoll { wake() }
    }

    // MARK: Internals (with the mutex held unless said otherwise)

    /// An event as a frame's bytes (events hold names, never a secret); nil when it cannot be
    /// encoded for want of guarded memory.
    static func frame(_ response: Response) -> [UInt8]? {
        guard let encoded = try? response.encoded() else { return nil }
        defer { encoded.wipe() }
        let n = UInt32(encoded.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)]
            + encoded.withUnsafeBytes { Array($0) }
    }

    /// Drops what is queued but not begun, and queues the last frame the watcher gets.
    private func overflowLocked(_ w: Watcher) {
        if w.sentOfFirst > 0 { w.pending.removeSubrange(1...) } else { w.pending.removeAll() }
        if let last = Self.frame(WatchEvent(kind: WatchEvent.overflow, time: Int64(Glibc.time(nil))).response) {
            w.pending.append(last)
        }
        w.closeBy = monotonicSeconds() + Self.overflowGrace
        flushLocked(w)
    }

    /// Sends queued frames until the socket would block.
    private func flushLocked(_ w: Watcher) {
        while let first = w.pending.first {
            let n = first.withUnsafeBytes { b in
                retryingOnInterrupt { send(w.fd, b.baseAddress! + w.sentOfFirst, b.count - w.sentOfFirst, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { return }
                return dropLocked(w)
            }
            w.sentOfFirst += n
            if w.sentOfFirst == first.count {
                w.pending.removeFirst()
                w.sentOfFirst = 0
            }
        }
        if w.closeBy != nil { dropLocked(w) }  // the overflow event is out
    }

    private func dropLocked(_ w: Watcher) {
        guard watchers.removeValue(forKey: w.fd) != nil else { return }
        shutdown(w.fd, Int32(SHUT_RDWR))  // the peer sees the end now; the number is freed by the poll thread
        closing.append(w.fd)
    }

    private func startLocked() {
        guard wakeRead < 0 else { return }
        var pair: [Int32] = [-1, -1]
        guard pipe(&pair) == 0 else { return }
        for fd in pair {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = pair[0]
        wakeWrite = pair[1]
        spawnThread("kcfs-watchers") { [self] in pollLoop() }
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWrite, &byte, 1)  // a full pipe already means "wake up"
    }

    /// Waits for peers that close, send, or can take more bytes, and for overflow deadlines.
    private func pollLoop() {
        var scratch = [UInt8](repeating: 0, count: 512)
        while true {
            let (set, timeout) = mutex.withLock { () -> ([pollfd], Int32) in
                for fd in closing { close(fd) }
                closing.removeAll()
                var set = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
                var nearest = Double.infinity
                for w in watchers.values {
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
                while scratch.withUnsafeMutableBytes({ Glibc.read(wakeRead, $0.baseAddress, $0.count) }) > 0 {}
            }
            mutex.withLock {
                for p in polled.dropFirst() where p.revents != 0 {
                    guard let w = watchers[p.fd] else { continue }
                    if p.revents & Int16(POLLIN) != 0 {
                        // A watch connection sends nothing more: read and discard, 0 is the end.
                        let got = scratch.withUnsafeMutableBytes { recv(p.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                        if got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR) { dropLocked(w); continue }
                    }
                    if p.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 { dropLocked(w); continue }
                    if p.revents & Int16(POLLOUT) != 0 { flushLocked(w) }
                }
                let now = monotonicSeconds()
                for w in watchers.values where (w.closeBy ?? .infinity) <= now { dropLocked(w) }
            }
        }
    }
}
