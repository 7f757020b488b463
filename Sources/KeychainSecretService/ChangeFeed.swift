import Glibc
import KeychainClient
import KeychainCore
import KeychainProtocol

/// The daemon's change stream (`watch`) read on a thread of its own, so that changes made by
/// the CLI, a mount or `import Security` become collection signals. The thread only wakes the
/// bus loop through a pipe; the bus thread does the rest (sd-bus is single-threaded).
final class ChangeFeed: @unchecked Sendable {
    /// The read end the bus loop polls: readable after one or more events.
    let wakeFD: Int32
    private let writeFD: Int32
    private let connect: () throws -> DaemonClient

    init?(connect: @escaping () throws -> DaemonClient) {
        var pair: [Int32] = [-1, -1]
        guard pipe(&pair) == 0 else { return nil }
        for fd in pair {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        wakeFD = pair[0]
        writeFD = pair[1]
        self.connect = connect
    }

    /// Starts the reader: it watches, and watches again a second later when the daemon goes.
    func start() {
        feedThread { [self] in
            while true {
                if let client = try? connect(), (try? client.send(Request(.watch))) != nil {
                    // A new stream may have missed changes: let the bus thread look again.
                    wake()
                    while let event = try? client.receive() {
                        if event.info["event"]?.stringValue != "overflow" { wake() }
                    }
                }
                sleep(1)
            }
        }
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
