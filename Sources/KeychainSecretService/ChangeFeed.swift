import Glibc
import KeychainClient
import KeychainCore
import KeychainProtocol
import Synchronization

/// The daemon's change stream (`watch`) read on a thread of its own, so that changes made by
/// the CLI, a mount or `import Security` become collection signals. The thread only wakes the
/// bus loop through a pipe; the bus thread does the rest (sd-bus is single-threaded).
final class ChangeFeed: @unchecked Sendable {
    /// The read end the bus loop polls: readable after one or more events.
    let wakeFD: Int32
    private let writeFD: Int32
    /// The reader waits on this pipe for a request to watch (again).
    private let restartRead: Int32
    private let restartWrite: Int32
    private let connect: () throws -> DaemonClient
    /// Whether the reader is watching or about to (set by the bus thread, cleared by the reader).
    private let running = Mutex(false)

    init?(connect: @escaping () throws -> DaemonClient) {
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
                    // A new stream may have missed changes: let the bus thread look again.
                    wake()
                    while let event = try? client.receive() {
                        if event.info["event"]?.stringValue != "overflow" { wake() }
                    }
                }
                running.withLock { $0 = false }
            }
        }
        resume()
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

    /// Empties the pipe; the bus thread calls it before it compares the vault with its snapshot.
    func drain() {
        var scratch = [UInt8](repeating: 0, count: 64)
        while read(wakeFD, &scratch, scratch.count) > 0 {}
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
