import Foundation
import XCTest

/// A relay on two adjacent loopback ports (commands, control), as `swtpm` listens, between a
/// TCTI and software TPMs: what the two relays below share (the ports, their threads, `stop()`).
package class TPMRelay: @unchecked Sendable {
    package let port: UInt16
    fileprivate let lock = NSLock()
    fileprivate var listeners: [Int32] = []
    fileprivate var open: Set<Int32> = []
    private var threads = 0
    private let done = NSCondition()

    /// The TCTI that reaches the TPM through the relay.
    package var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }

    /// Binds a free port pair and runs `accept(listener, i)` for each (0 commands, 1 control).
    fileprivate init(what: String) throws {
        var bound: (UInt16, [Int32])?
        for _ in 0..<5 where bound == nil {
            guard let p = SoftwareTPM.freePortPair() else { continue }
            let fds = [Loopback.listen(p), Loopback.listen(p + 1)]
            if fds.allSatisfy({ $0 >= 0 }) { bound = (p, fds) } else { fds.filter { $0 >= 0 }.forEach { close($0) } }
        }
        guard let (p, fds) = bound else { throw XCTSkip("no free loopback ports for \(what)") }
        port = p
        listeners = fds
    }

    fileprivate func listen() {
        for (i, fd) in listeners.enumerated() { start { self.accept(fd, i) } }
    }

    /// Serves one listener until `stop()` closes it.
    fileprivate func accept(_ listener: Int32, _ index: Int) {}

    /// Takes `fds` as open (so `stop()` shuts them); false, closing them, once stopped.
    fileprivate func adopt(_ fds: [Int32]) -> Bool {
        let adopted = lock.withLock {
            guard !listeners.isEmpty else { return false }
            open.formUnion(fds)
            return true
        }
        if !adopted { fds.forEach { close($0) } }
        return adopted
    }

    fileprivate func finish(_ fds: [Int32]) {
        lock.withLock { open.subtract(fds) }
        fds.forEach { close($0) }
    }

    package func stop() {
        lock.withLock {
            for fd in listeners { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
            listeners = []
            for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
        }
        done.lock()
        while threads > 0 { done.wait() }
        done.unlock()
    }

    fileprivate func start(_ body: @escaping @Sendable () -> Void) {
        done.lock(); threads += 1; done.unlock()
        Thread {
            body()
            self.done.lock(); self.threads -= 1; self.done.broadcast(); self.done.unlock()
        }.start()
    }

    /// Copies both ways until either side closes; `seen` gets each read, 0 upstream, 1 down.
    fileprivate static func copy(_ client: Int32, _ server: Int32, seen: (Int, ArraySlice<UInt8>) -> Void = { _, _ in }) {
        var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: server, events: Int16(POLLIN), revents: 0)]
        var buf = [UInt8](repeating: 0, count: 1 << 16)
        loop: while poll(&fds, 2, -1) >= 0 || errno == EINTR {
            for (i, (from, to)) in [(client, server), (server, client)].enumerated() where fds[i].revents != 0 {
                let n = buf.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
                guard n > 0 else { break loop }
                seen(i, buf[..<n])
                guard Loopback.writeAll(to, Array(buf[..<n])) else { break loop }
            }
        }
    }
}

/// A recording relay to a software TPM: forwards every connection to the TPM's ports and keeps
/// what passes each way, one stream per connection and direction. It stands in for someone
/// probing the bus of a discrete TPM. `stop()` closes everything; tests register it as a teardown.
package final class TPMWireTap: TPMRelay, @unchecked Sendable {
    private let upstream: UInt16
    private var streams: [[UInt8]] = []

    package init(forwardingTo tpm: SoftwareTPM) throws {
        upstream = tpm.port
        try super.init(what: "the TPM tap")
        listen()
    }

    /// Every stream recorded so far (commands and responses, one entry per connection and direction).
    package var recorded: [[UInt8]] { lock.withLock { streams } }

    /// True when `needle` occurs in one recorded stream.
    package func saw(_ needle: [UInt8]) -> Bool {
        recorded.contains { stream in
            guard stream.count >= needle.count, !needle.isEmpty else { return false }
            return (0...(stream.count - needle.count)).contains { stream[$0..<($0 + needle.count)].elementsEqual(needle) }
        }
    }

    fileprivate override func accept(_ listener: Int32, _ index: Int) {
        while true {
            let client = Glibc.accept(listener, nil, nil)
            guard client >= 0 else { return }  // closed by stop()
            let server = Loopback.connect(upstream + UInt16(index))
            guard server >= 0 else { close(client); continue }
            guard adopt([client, server]) else { return }
            let first: Int = lock.withLock {
                streams.append([]); streams.append([])
                return streams.count - 2
            }
            start {
                TPMRelay.copy(client, server) { direction, bytes in self.lock.withLock { self.streams[first + direction] += bytes } }
                self.finish([client, server])
            }
        }
    }
}

/// An active interposer on the bus: passes whole TPM commands to the `first` TPM until it has
/// passed `switchAfter` TPM2_CreatePrimary commands, and every later command to `second`, which
/// then answers in the first one's place with its own storage root key. The control port goes to
/// `first`. `stop()` closes everything; tests register it as a teardown.
package final class TPMInterposer: TPMRelay, @unchecked Sendable {
    private let first: UInt16, second: UInt16, switchAfter: Int
    private var createPrimaries = 0

    package init(first: SoftwareTPM, second: SoftwareTPM, switchAfter: Int) throws {
        self.first = first.port
        self.second = second.port
        self.switchAfter = switchAfter
        try super.init(what: "the TPM interposer")
        listen()
    }

    fileprivate override func accept(_ listener: Int32, _ index: Int) {
        let control = index == 1
        while true {
            let client = Glibc.accept(listener, nil, nil)
            guard client >= 0 else { return }
            let upstream = control ? [Loopback.connect(first + 1)] : [Loopback.connect(first), Loopback.connect(second)]
            guard upstream.allSatisfy({ $0 >= 0 }) else { ([client] + upstream).filter { $0 >= 0 }.forEach { close($0) }; continue }
            guard adopt([client] + upstream) else { return }
            start {
                if control {
                    TPMRelay.copy(client, upstream[0])
                    self.finish([client] + upstream)
                } else {
                    self.relayCommands(client, upstream)
                }
            }
        }
    }

    /// One command from the client, to the TPM chosen for it; its response back.
    private func relayCommands(_ client: Int32, _ tpms: [Int32]) {
        while let command = Self.readFrame(client) {
            let code = command[6..<10].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let target: Int32 = lock.withLock {
                if code == 0x131 { createPrimaries += 1 }
                return createPrimaries > switchAfter ? tpms[1] : tpms[0]
            }
            guard Loopback.writeAll(target, command), let response = Self.readFrame(target), Loopback.writeAll(client, response) else { break }
        }
        finish([client] + tpms)
    }

    /// A TPM command or response: tag, a 4-byte size that counts the whole frame, the rest.
    private static func readFrame(_ fd: Int32) -> [UInt8]? {
        guard let header = readExactly(fd, 10) else { return nil }
        let size = Int(header[2..<6].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard size >= 10, size <= 1 << 16, let rest = readExactly(fd, size - 10) else { return nil }
        return header + rest
    }

    private static func readExactly(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = out.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, count - got) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            got += n
        }
        return out
    }
}

/// TCP on 127.0.0.1 for the relays: descriptors, -1 on failure.
private enum Loopback {
    static func address(_ port: UInt16) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return addr
    }

    static func listen(_ port: UInt16) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var addr = address(port)
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0 && Glibc.listen(fd, 16) == 0
        if !ok { close(fd); return -1 }
        return fd
    }

    static func connect(_ port: UInt16) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var addr = address(port)
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
        if !ok { close(fd); return -1 }
        return fd
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let w = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + sent, bytes.count - sent) }
            if w < 0 && errno == EINTR { continue }
            guard w > 0 else { return false }
            sent += w
        }
        return true
    }
}
