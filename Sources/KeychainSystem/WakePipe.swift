import Glibc

/// A pipe that wakes a thread waiting in `poll`: any number of pokes before it looks are one.
/// Its descriptors live as long as it does, so a poke that comes late never writes to a
/// descriptor reused for something else.
public final class WakePipe: Sendable {
    public let readEnd: Int32
    public let writeEnd: Int32

    /// Both ends non-blocking and close-on-exec; -1 when pipe(2) failed.
    public init() {
        var pair: [Int32] = [-1, -1]
        if Glibc.pipe(&pair) == 0 {
            for fd in pair {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
        }
        (readEnd, writeEnd) = (pair[0], pair[1])
    }

    deinit {
        if readEnd >= 0 { close(readEnd) }
        if writeEnd >= 0 { close(writeEnd) }
    }

    public var isOpen: Bool { readEnd >= 0 }

    public func poke() {
        guard writeEnd >= 0 else { return }
        var byte: UInt8 = 1
        _ = Glibc.write(writeEnd, &byte, 1)  // a full pipe already means "look"
    }

    /// Reads every poke so far.
    public func drain() {
        guard readEnd >= 0 else { return }
        var scratch = [UInt8](repeating: 0, count: 64)
        while scratch.withUnsafeMutableBytes({ Glibc.read(readEnd, $0.baseAddress, $0.count) }) > 0 {}
    }
}
