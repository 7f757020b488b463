import Glibc
import KeychainClient
import KeychainModel
import KeychainProtocol
import Synchronization

/// What the bus thread looks at again for the changes read since its last round.
enum FeedChange: Hashable {
    /// The items of one service (and account) the daemon named: an add, update or delete.
    case named(service: String, account: String?)
    /// Everything: a new stream (it may have missed changes), a lock or unlock, or a change
    /// that names no service (or a stream without names: this process is not an administrator).
    case everything
}

/// The daemon's change stream (`watch`) read on a thread of its own, so that changes made by
/// the CLI, a mount or `import Security` become collection signals. The thread queues what each
/// event names and wakes the bus loop through a pipe; the bus thread does the rest (sd-bus is
/// single-threaded).
final class ChangeFeed: Sendable {
    /// Past this many queued changes the bus thread looks at everything once instead.
    static let queueLimit = 4096
    /// The read end the bus loop polls: readable after one or more events.
    let wakeFD: Int32
    private let writeFD: Int32
    /// The reader waits on this pipe for a request to watch (again).
    private let restartRead: Int32
    private let restartWrite: Int32
    private let connect: @Sendable () throws -> DaemonClient
    /// Whether the reader is watching or about to (set by the bus thread, cleared by the reader).
    private let running = Mutex(false)
    /// Changes read and not yet taken by the bus thread.
    private let queue = Mutex<[FeedChange]>([])
    /// The stream being read: its socket (-1 without one), whether the reader is taking what
    /// arrived, and the number of the group table, which changes with every table change.
    private struct StreamState {
        var descriptor: Int32 = -1
        var reading = false
        var generation = 0
    }
    private let stream = Mutex(StreamState())

    init?(connect: @escaping @Sendable () throws -> DaemonClient) {
        var wake: [Int32] = [-1, -1], restart: [Int32] = [-1, -1]
        guard pipe(&wake) == 0 else { return nil }
        guard pipe(&restart) == 0 else {
            close(wake[0]); close(wake[1])
            return nil
        }
        for fd in wake + restart { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        for fd in wake { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
        (wakeFD, writeFD, restartRead, restartWrite) = (wake[0], wake[1], restart[0], restart[1])
        self.connect = connect
    }

    /// Starts the reader. When the stream ends (the daemon stopped) it waits for `resume()`
    /// rather than connecting again by itself, which would start a stopped daemon.
    func start() {
        feedThread { [self] in
            var byte: UInt8 = 0
            while read(restartRead, &byte, 1) == 1 {
                if let client = try? connect(), (try? client.send(Request(.watch))) != nil {
                    // A table read before this stream started may have missed a change.
                    stream.withLock { $0.descriptor = client.descriptor; $0.generation += 1 }
                    // A new stream may have missed changes: let the bus thread look again.
                    enqueue(.everything)
                    follow(client)
                    // Before the client (and its descriptor) goes: no cached table outlives the stream.
                    stream.withLock { $0 = StreamState(descriptor: -1, reading: false, generation: $0.generation + 1) }
                }
                running.withLock { $0 = false }
            }
        }
        resume()
    }

    /// Reads events until the stream ends. `reading` is set from the moment the socket is
    /// readable until what it held is queued, so `tableGeneration()` can tell whether every
    /// event sent so far was taken.
    private func follow(_ client: DaemonClient) {
        while true {
            if !client.hasBufferedBytes {
                var p = pollfd(fd: client.descriptor, events: Int16(POLLIN), revents: 0)
                while poll(&p, 1, -1) < 0 && errno == EINTR {}
            }
            stream.withLock { $0.reading = true }
            defer { stream.withLock { $0.reading = false } }
            repeat {
                guard let event = try? client.receive() else { return }
                take(event)
            } while client.hasBufferedBytes
        }
    }

    private func take(_ frame: Response) {
        guard let event = try? WatchEvent(decoding: frame) else { return }
        let kind = event.kind
        // The stream's last frame after an overflow: the next stream looks at everything.
        if kind == WatchEvent.overflow { return }
        // An unlock may load the table of a vault opened locked; a groups event is a new table.
        if kind == ChangeKind.groups.rawValue || kind == ChangeKind.unlock.rawValue {
            stream.withLock { $0.generation += 1 }
        }
        if kind == ChangeKind.add.rawValue || kind == ChangeKind.update.rawValue || kind == ChangeKind.delete.rawValue,
           let service = event.service {
            enqueue(.named(service: service, account: event.account))
        } else {
            enqueue(.everything)
        }
    }

    /// The number of the group table as the stream has it, once every event the daemon sent
    /// before this call is taken: the same number means no table change since (a new stream, a
    /// `groups` or `unlock` event, the stream's end all change it). Nil without a stream, or
    /// when the reader is not done within `wait` seconds (a burst of changes keeps it reading):
    /// read the table from the daemon then, which costs a round trip and nothing else.
    func tableGeneration(wait: Double = 0.02) -> Int? {
        func now() -> Double {
            var t = timespec()
            clock_gettime(CLOCK_MONOTONIC, &t)
            return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
        }
        let deadline = now() + wait
        while true {
            let state = stream.withLock { s -> (Int?, Bool) in
                guard s.descriptor >= 0 else { return (nil, false) }
                // The socket first, then `reading`: bytes gone from the socket were taken while it was set.
                var unread: Int32 = 0
                let pending = ioctl(s.descriptor, UInt(FIONREAD), &unread) != 0 || unread > 0
                return (s.generation, pending || s.reading)
            }
            guard let generation = state.0 else { return nil }
            if !state.1 { return generation }
            guard now() < deadline else { return nil }
            usleep(200)
        }
    }

    /// Asks the reader to watch again if its stream ended; the bus thread calls it for each
    /// D-Bus call, which reaches (and may have started) the daemon anyway.
    func resume() {
        let ask = running.withLock { was in
            defer { was = true }
            return !was
        }
        guard ask else { return }
        var one: UInt8 = 1
        _ = write(restartWrite, &one, 1)
    }

    /// Empties the pipe and takes the changes queued so far, in order, each once (its latest
    /// state is what the bus thread reads), or `[.everything]`.
    func drain() -> [FeedChange] {
        var scratch = [UInt8](repeating: 0, count: 64)
        while read(wakeFD, &scratch, scratch.count) > 0 {}
        let taken = queue.withLock { q in
            defer { q = [] }
            return q
        }
        if taken.contains(.everything) { return [.everything] }
        var seen = Set<FeedChange>()
        return taken.filter { seen.insert($0).inserted }
    }

    private func enqueue(_ change: FeedChange) {
        queue.withLock { q in
            if q.count >= Self.queueLimit { q = [.everything] } else if q.last != change { q.append(change) }
        }
        wake()
    }

    private func wake() {
        var one: UInt8 = 1
        _ = write(writeFD, &one, 1)
    }
}

/// Runs `body` on a new detached thread.
private func feedThread(_ body: @escaping () -> Void) {
    final class Box { let body: () -> Void; init(_ b: @escaping () -> Void) { body = b } }
    let context = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    pthread_create(&thread, nil, { raw in
        Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
        return nil
    }, context)
    pthread_detach(thread)
}
