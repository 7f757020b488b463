import CProcess
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import KeychainSystem
import Synchronization

/// What the connection layer asks of the daemon.
protocol RequestHandling: AnyObject, Sendable {
    /// The request's operation: how it is admitted and where it runs; nil when it names none.
    func row(for request: Request) -> OperationRow?
    /// Answers one request its row admitted, or hands the rest to a slow worker. Never throws:
    /// every error is a status in the reply, also in the steps it hands on.
    func respond(to request: Request, row: OperationRow, from caller: CallerIdentity) -> Outcome
    /// Each request's wait and service time (`serviceTimes`).
    var serviceClock: ServiceClock { get }
    /// Takes over a connection that now only receives events (`watch`).
    func adoptWatcher(fd: Int32, caller: CallerIdentity, request: Request)
    /// Ends the daemon after a `stop` has been answered.
    func stopAfterReply(_ caller: CallerIdentity) -> Never
}

struct Reply: Sendable {
    enum After { case nothing, watch, stop }
    var response: Response
    var after: After = .nothing
}

/// One request's time inside the daemon: waiting (for a thread, a slow worker, the end of a
/// back-off) and being served, in seconds.
struct RequestTiming: Sendable {
    var readyAt: Double
    var waited = 0.0
    var served = 0.0

    init(readAt: Double) { readyAt = readAt }

    /// Runs one step of the request, counting the wait before it and its run.
    mutating func measure(_ step: () -> Outcome) -> Outcome {
        let start = monotonicSeconds()
        waited += max(0, start - readyAt)
        let outcome = step()
        let end = monotonicSeconds()
        served += end - start
        if case .onSlowWorker(let notBefore, _) = outcome { readyAt = max(end, notBefore) }
        return outcome
    }
}

/// The daemon's socket server: one epoll set holding the listener, every connection and a
/// one-second timer, served by a few event threads. Each descriptor is armed for one event at
/// a time (`EPOLLONESHOT`), so the thread that gets it owns the connection until it arms it
/// again. An idle connection costs a descriptor, never a thread; a request that waits runs on
/// a `SlowLane` worker; partial frames and unread replies have a deadline (`ServerLimits`).
final class ConnectionServer: Sendable {
    private let epoll: Epoll
    private let listener: Int32
    private let timer: PeriodicTimer
    private let handler: RequestHandling
    let quotas: Quotas
    let limits: ServerLimits
    private let slow: SlowLane
    private let turns = Turns()
    /// Closes the descriptors the owner and root pass that are not /dev/fuse.
    private let closer: DescriptorCloser
    private let connections = Locked<[UInt64: Connection]>([:])
    private let nextID = Atomic<UInt64>(16)
    /// Kept open so that, out of descriptors, a connection can still be accepted and closed
    /// instead of waking every thread forever.
    private let spare = Mutex<Int32>(-1)

    /// The whole frame of an errSecAllocate reply, made at start: the answer when a reply cannot
    /// be built for want of guarded memory (it holds no secret).
    private let outOfMemoryFrame: [UInt8]
    /// Level-triggered: once written, every event thread wakes and ends (`stop`).
    private let stopper: EventCounter
    private let running = Atomic<Int>(0)

    private static let listenerID: UInt64 = 1
    private static let timerID: UInt64 = 2
    private static let stopID: UInt64 = 3

    init(listener: Int32, handler: RequestHandling, limits: ServerLimits) throws {
        let refusal = try Response(status: .allocate).encoded()
        let n = UInt32(refusal.count)
        outOfMemoryFrame = [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)]
            + refusal.withUnsafeBytes { Array($0) }
        self.listener = listener
        self.handler = handler
        self.limits = limits
        quotas = Quotas(limits: limits)
        slow = SlowLane(limits: limits)
        closer = try DescriptorCloser()
        do {
            epoll = try Epoll()
            timer = try PeriodicTimer(everySeconds: 1)
            stopper = try EventCounter(nonBlocking: true)
            try epoll.add(stopper.descriptor, tag: Self.stopID, events: .readable)
        } catch { throw KeychainStatus.io }
        guard kcfs_set_nonblocking(listener) == 0 else { throw KeychainStatus.io }
        guard register(listener, id: Self.listenerID, events: .readable),
              register(timer.descriptor, id: Self.timerID, events: .readable) else { throw KeychainStatus.io }
        spare.withLock { $0 = open("/dev/null", O_RDONLY | O_CLOEXEC) }
    }

    /// - Throws: `KeychainStatus.internalComponent` when a thread cannot be started: a daemon
    /// with fewer threads than its limits promise does not serve.
    func start() throws {
        try slow.start()
        for i in 0..<limits.eventThreads {
            running.add(1, ordering: .releasing)
            guard spawnThread("kcfs-event-\(i)", { [self] in eventLoop() }) else {
                running.subtract(1, ordering: .releasing)
                throw KeychainStatus.internalComponent
            }
        }
    }

    /// Blocks the calling thread for the daemon's life (it ends with `exit`).
    func wait() -> Never {
        while true { sleep(3600) }
    }

    /// Ends an in-process server (tests): the event threads return, every connection and the
    /// listener are closed. Slow workers finish what they run and then wait, idle.
    func stop() {
        stopper.signal()
        while running.load(ordering: .acquiring) > 0 { usleep(1_000) }
        slow.stop()
        closer.stop()
        for c in connections.withLock({ Array($0.values) }) { drop(c) }
        close(listener)
        timer.close()
        stopper.close()
        epoll.close()
        spare.withLock { if $0 >= 0 { close($0) } }
    }

    /// Serves an already connected socket as if it had been accepted, with the given identity
    /// (tests run the daemon's handlers in-process over a socketpair this way).
    @discardableResult
    func adopt(fd: Int32, caller: CallerIdentity) -> Bool {
        guard kcfs_set_nonblocking(fd) == 0, quotas.admitConnection(uid: caller.uid) else {
            close(fd)
            return false
        }
        // Only a caller allowed to mount may pass a descriptor (its /dev/fuse). The listener
        // refuses them, and so does every socket accepted from it, until allowed here; a client
        // that passes one makes a round trip first (`DaemonClient.send(_:passing:)`).
        let mayPass = limits.isPrivileged(uid: caller.uid)
        if mayPass { _ = kcfs_set_pass_rights(fd, 1) }  // ENOPROTOOPT before Linux 6.16: allowed already
        let id = nextID.add(1, ordering: .relaxed).newValue
        let connection = Connection(id: id, fd: fd, caller: caller, deadlineSeconds: limits.frameDeadline,
                                    closer: mayPass ? closer : nil)
        connections.withLock { $0[id] = connection }
        guard register(fd, id: id, events: .readable) else {
            drop(connection)
            return false
        }
        return true
    }

    // MARK: Event threads

    private func eventLoop() {
        defer { running.subtract(1, ordering: .releasing) }
        guard let scratch = try? WorkerScratch(onEventThread: true) else { return }
        while true {
            guard let event = epoll.next() else { continue }  // EINTR
            switch event.tag {
            case Self.stopID:
                return
            case Self.listenerID:
                acceptPending()
                rearm(listener, id: Self.listenerID, events: .readable)
            case Self.timerID:
                timer.drain()
                sweepDeadlines()
                rearm(timer.descriptor, id: Self.timerID, events: .readable)
            default:
                guard let connection = connections.withLock({ $0[event.tag] }) else { continue }
                if event.events.contains(.writable) {
                    afterSend(connection, connection.continueSending(quotas: quotas), scratch: scratch)
                } else {
                    serveInTurn(connection, scratch: scratch)
                }
                // A connection answered on this thread may be kept awake for its next request.
                while let next = scratch.awake {
                    scratch.awake = nil
                    serveAwake(next, scratch: scratch)
                }
            }
        }
    }

    /// Waits a moment, awake, for the next request of a connection just answered, before
    /// handing it back to epoll. A client in a loop sends its next request within microseconds
    /// of the reply, and on a virtual machine waking a sleeping thread costs more than the
    /// wait. The window adapts: a connection whose request did not come in time is put back to
    /// sleep at once for its next few replies (`Connection.awakeMisses`).
    private func serveAwake(_ connection: Connection, scratch: WorkerScratch) {
        let until = monotonicSeconds() + Double(limits.awakeMicros) / 1e6
        while true {
            switch connection.receive(into: scratch.bytes, quotas: quotas) {
            case .closed: return drop(connection)
            case .frame(let frame):
                connection.awakeMisses = 0
                return answer(frame, on: connection, scratch: scratch)
            case .wouldBlock:
                if monotonicSeconds() < until { continue }
                connection.awakeMisses += 1
                return rearm(connection.fd, id: connection.id, events: .readable)
            }
        }
    }

    /// Accepts what is waiting (a bounded batch, so other events are not starved), pinning
    /// each caller's identity now.
    private func acceptPending() {
        for _ in 0..<256 {
            let fd = kcfs_accept_nonblocking(listener)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE { shedOne(); continue }
                return
            }
            guard let caller = PinnedIdentity.of(socket: fd) else { close(fd); continue }
            adopt(fd: fd, caller: caller)
        }
    }

    /// Out of descriptors: accept one connection with the spare descriptor and close it.
    private func shedOne() {
        spare.withLock { s in
            if s >= 0 { close(s) }
            let fd = accept(listener, nil, nil)
            if fd >= 0 { close(fd) }
            s = open("/dev/null", O_RDONLY | O_CLOEXEC)
        }
    }

    /// Shuts down connections whose frame or reply is past its deadline; the thread that owns
    /// each one then sees the end of the stream and closes it.
    private func sweepDeadlines() {
        let now = Connection.nowMillis()
        let late = connections.withLock { all in
            all.values.filter { c in
                let d = c.deadline.load(ordering: .relaxed)
                return d != 0 && d < now
            }.map(\.fd)
        }
        for fd in late { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Serves a readable connection, one request at a time per uid other than the owner and
    /// root (`Turns`); a connection whose uid is mid-turn is served when the turn comes to it.
    private func serveInTurn(_ connection: Connection, scratch: WorkerScratch) {
        let uid = connection.caller.uid
        if limits.isPrivileged(uid: uid) { return serve(connection, scratch: scratch) }
        guard turns.begin(connection) else { return }
        serve(connection, scratch: scratch)
        if let next = turns.end(uid: uid) { rearm(next.fd, id: next.id, events: .readable) }
    }

    /// Reads from a connection that became readable, and answers each complete frame.
    private func serve(_ connection: Connection, scratch: WorkerScratch) {
        switch connection.receive(into: scratch.bytes, quotas: quotas) {
        case .closed: drop(connection)
        case .wouldBlock: rearm(connection.fd, id: connection.id, events: .readable)
        case .frame(let frame): answer(frame, on: connection, scratch: scratch)
        }
    }

    private func answer(_ frame: SecureBytes, on connection: Connection, scratch: WorkerScratch) {
        let readAt = monotonicSeconds()
        // Only a mount takes a descriptor (it is /dev/fuse: `Connection.receiveBytes`); any
        // other request's is closed with this reference.
        let passed = connection.takeDescriptor()
        var request: Request
        do {
            request = try Request.decode(frame)
            // A mount whose descriptor is not the FUSE device is refused, not served without it.
            if request.operation == .mount && passed.refused { throw KeychainStatus.param }
            if request.operation == .mount { request.descriptor = passed.device }
        } catch {
            frame.wipe()
            connection.finished(frame: frame, quotas: quotas)
            reply(Reply(response: Response(status: error as? KeychainStatus ?? .decode)), on: connection, scratch: scratch)
            return
        }
        frame.wipe()  // its bytes live on in the request; its charge stays until the reply
        guard let row = handler.row(for: request), row.secrets.contains(request.secrets.count) else {
            connection.finished(frame: frame, quotas: quotas)
            reply(Reply(response: Response(status: .param)), on: connection, scratch: scratch)
            return
        }
        var timing = RequestTiming(readAt: readAt)
        let caller = connection.caller
        if row.runsOnSlowWorker(request) {
            let first: @Sendable () -> Outcome = { [handler, request] in handler.respond(to: request, row: row, from: caller) }
            return handOver(first, notBefore: 0, timing: timing, request: request, frame: frame, on: connection)
        }
        // Not escaping: the fast lane's request allocates no closure context.
        switch timing.measure({ handler.respond(to: request, row: row, from: caller) }) {
        case .reply(let r):
            finish(r, timing: timing, request: request, frame: frame, on: connection, scratch: scratch)
        case .onSlowWorker(let notBefore, let next):
            handOver(Self.unthrowing(next), notBefore: notBefore, timing: timing, request: request, frame: frame, on: connection)
        }
    }

    /// A step the daemon guarded (its errors are statuses already) as the lanes run it.
    private static func unthrowing(_ step: @escaping @Sendable () throws -> Outcome) -> @Sendable () -> Outcome {
        { (try? step()) ?? .reply(Reply(response: Response(status: .internalComponent))) }
    }

    private func finish(_ r: Reply, timing: RequestTiming, request: Request, frame: SecureBytes, on connection: Connection,
                        scratch: WorkerScratch?) {
        handler.serviceClock.record(privileged: limits.isPrivileged(uid: connection.caller.uid), wait: timing.waited,
                                    service: timing.served)
        connection.finished(frame: frame, quotas: quotas)
        reply(r, on: connection, request: request, scratch: scratch)
    }

    /// Queues the rest of a request for a slow worker; the connection stays disarmed until it
    /// is answered. A step that must wait longer (a back-off) goes back to the queue.
    private func handOver(_ step: @escaping @Sendable () -> Outcome, notBefore: Double, timing: RequestTiming, request: Request,
                          frame: SecureBytes, on connection: Connection) {
        guard quotas.admitSlow(uid: connection.caller.uid) else {
            connection.finished(frame: frame, quotas: quotas)
            // Too many of this caller's requests are waiting already.
            reply(Reply(response: Response(status: .allocate)), on: connection, scratch: nil)
            return
        }
        /// The step to run next and the time counted so far; one worker runs it at a time.
        final class Pending: Sendable {
            struct State: Sendable {
                var step: @Sendable () -> Outcome
                var timing: RequestTiming
            }
            let state: Mutex<State>
            init(_ state: State) { self.state = Mutex(state) }
        }
        let pending = Pending(Pending.State(step: step, timing: timing))
        var task = SlowLane.Task(connection: connection) { [self] scratch in
            var s = pending.state.withLock { $0 }
            let outcome = s.timing.measure(s.step)
            switch outcome {
            case .reply(let r):
                quotas.releaseSlow(uid: connection.caller.uid)
                finish(r, timing: s.timing, request: request, frame: frame, on: connection, scratch: scratch)
                return nil
            case .onSlowWorker(let again, let next):
                s.step = Self.unthrowing(next)
                pending.state.withLock { $0 = s }
                return again
            }
        }
        task.notBefore = notBefore
        slow.submit(task)
    }

    private func reply(_ r: Reply, on connection: Connection, request: Request? = nil, scratch: WorkerScratch?) {
        guard let out = try? r.response.encoded() else {
            // Out of guarded memory for the reply: say so, in a frame made at start.
            let sent = outOfMemoryFrame.withUnsafeBytes { send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            return sent == outOfMemoryFrame.count ? afterSend(connection, .done, scratch: scratch) : drop(connection)
        }
        let sent = connection.send(out, quotas: quotas)
        switch r.after {
        case .nothing:
            afterSend(connection, sent, scratch: scratch)
        case .watch:
            guard sent == .done, let request else { return drop(connection) }
            // From now on the event hub owns the descriptor.
            try? epoll.remove(connection.fd)
            connections.withLock { _ = $0.removeValue(forKey: connection.id) }
            connection.release(quotas: quotas)
            quotas.releaseConnection(uid: connection.caller.uid)
            _ = kcfs_set_pass_rights(connection.fd, 0)  // a watcher only reads events
            handler.adoptWatcher(fd: connection.fd, caller: connection.caller, request: request)
        case .stop:
            var status = sent
            for _ in 0..<100 where status == .wouldBlock {
                usleep(10_000)
                status = connection.continueSending(quotas: quotas)
            }
            handler.stopAfterReply(connection.caller)
        }
    }

    private func afterSend(_ connection: Connection, _ sent: Connection.Sent, scratch: WorkerScratch?) {
        switch sent {
        case .failed: drop(connection)
        case .wouldBlock: rearm(connection.fd, id: connection.id, events: .writable)
        case .done:
            // Bytes the client sent ahead are answered now: the socket will not signal them again.
            if connection.hasUnread, let scratch { serve(connection, scratch: scratch) }
            else if let scratch, scratch.onEventThread, limits.awakeMicros > 0, limits.isPrivileged(uid: connection.caller.uid),
                    connection.keepsAwake {
                scratch.awake = connection  // the event loop waits for its next request (`serveAwake`)
            } else {
                rearm(connection.fd, id: connection.id, events: .readable)
            }
        }
    }

    private func drop(_ connection: Connection) {
        try? epoll.remove(connection.fd)
        connections.withLock { _ = $0.removeValue(forKey: connection.id) }
        close(connection.fd)
        connection.release(quotas: quotas)
        quotas.releaseConnection(uid: connection.caller.uid)
    }

    // MARK: epoll

    private func register(_ fd: Int32, id: UInt64, events: Epoll.Events) -> Bool {
        (try? epoll.add(fd, tag: id, events: events.union([.oneShot, .peerClosed]))) != nil
    }

    private func rearm(_ fd: Int32, id: UInt64, events: Epoll.Events) {
        try? epoll.rearm(fd, tag: id, events: events.union([.oneShot, .peerClosed]))
    }
}
