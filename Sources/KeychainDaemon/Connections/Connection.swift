import CProcess
import Glibc
import KeychainCore
import KeychainSystem
import KeychainfsAccess
import KeychainCrypto
import KeychainProtocol
import Synchronization

/// One accepted socket: its caller, pinned at accept, and the frame being received or the reply
/// being sent. The socket is non-blocking and registered for one event at a time
/// (`EPOLLONESHOT`), so exactly one thread works on a connection between two arms: its fields
/// need no lock. Only `deadline` is read by the sweeper, which then shuts the socket down and
/// lets the owning path close it.
// Unchecked for that reason: epoll's one-shot arming, not a lock, hands the fields from thread
// to thread.
final class Connection: @unchecked Sendable {
    let id: UInt64
    let fd: Int32
    let caller: CallerIdentity

    /// Monotonic milliseconds by which the frame being received must be complete, or the reply
    /// being sent taken; 0 when nothing is under way.
    let deadline = Atomic<Int64>(0)

    private var header: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
    private var headerFilled = 0
    private var payload: SecureBytes?
    private var payloadLength = 0
    private var payloadFilled = 0
    /// Bytes that arrived after a complete frame (a client that sends ahead).
    private var unread: SecureBytes?
    private var reply: SecureBytes?
    /// The reply's length, big-endian, as its frame's header (a word, not an array per reply).
    private var replyHeader: UInt32 = 0
    private var replySent = 0
    /// Guarded bytes charged to the caller's quota: the frame being received or handled and any
    /// bytes sent ahead, and a reply the peer has not taken yet.
    private var inputCharge = 0
    private var replyCharge = 0
    /// A descriptor passed with the request being received (a mount's /dev/fuse); at most one.
    private var passed: PassedDescriptor?
    /// Where descriptors this connection passed that the daemon will not use are closed; nil
    /// for a caller that may not pass one at all (anyone but the owner and root, who mount):
    /// its socket refuses them (SO_PASSRIGHTS) and receives with no room for one.
    private let closer: DescriptorCloser?
    /// Descriptors passed that were not /dev/fuse; past a few, the connection is dropped.
    private var unwantedDescriptors = 0
    /// Whether one such came with the request being received (a mount then is errSecParam).
    private var unwantedWithRequest = false
    /// Set when a descriptor came that may not: the connection is then closed (`receive`).
    private var refusedDescriptor = false

    /// Seconds a frame may take from its first byte to its last, and a reply to be taken.
    private let deadlineSeconds: Double

    /// - Parameter closer: given only to a connection that may pass descriptors.
    init(id: UInt64, fd: Int32, caller: CallerIdentity, deadlineSeconds: Double, closer: DescriptorCloser? = nil) {
        self.id = id
        self.fd = fd
        self.caller = caller
        self.deadlineSeconds = deadlineSeconds
        self.closer = closer
    }

    private func startDeadline() {
        deadline.store(Self.nowMillis() + Int64(deadlineSeconds * 1000), ordering: .relaxed)
    }

    /// Consecutive replies after which the next request did not come while the event thread
    /// waited awake; after a few, the connection sleeps in epoll for a while before trying again.
    var awakeMisses = 0
    private var repliesSinceMiss = 0

    /// Whether to wait awake for this connection's next request after this reply.
    var keepsAwake: Bool {
        guard awakeMisses >= 2 else { return true }
        repliesSinceMiss += 1
        if repliesSinceMiss < 64 { return false }
        repliesSinceMiss = 0
        awakeMisses = 0  // try again: the client may have become a loop
        return true
    }

    /// True when bytes sent ahead of the last reply wait to be read.
    var hasUnread: Bool { unread != nil }

    enum Received {
        case frame(SecureBytes)
        /// Nothing more to read now; wait for the socket.
        case wouldBlock
        /// The peer closed, broke the protocol or passed a cap: close the connection.
        case closed
    }

    /// Reads what has arrived, until a frame is complete or the socket has no more.
    /// `scratch` is the calling thread's guarded receive buffer.
    func receive(into scratch: SecureBytes, quotas: Quotas) -> Received {
        if let pending = unread {
            unread = nil
            let outcome = pending.withUnsafeBytes { feed($0, quotas: quotas) }
            var kept = true
            if case .frame(_, let used) = outcome, used < pending.count {
                kept = keepUnread(pending, from: used, quotas: quotas)
            }
            quotas.refund(bytes: pending.count, uid: caller.uid)
            inputCharge -= pending.count
            pending.wipe()
            switch outcome {
            case .frame(let f, _): return kept ? .frame(f) : .closed
            case .more: break
            case .broken: return .closed
            }
        }
        while true {
            // A large frame's body goes straight into its own buffer; everything else lands in
            // the thread's scratch buffer first, so a whole small request costs one recv.
            let n: Int
            let direct = payload != nil && payloadLength - payloadFilled >= scratch.count && payloadFilled < (payload?.count ?? 0)
            if direct, let p = payload {
                n = p.withUnsafeMutableBytes { b in retryingOnInterrupt { receiveBytes(b.baseAddress! + payloadFilled, b.count - payloadFilled) } }
                if n > 0 { payloadFilled += n }
            } else {
                n = scratch.withUnsafeMutableBytes { b in retryingOnInterrupt { receiveBytes(b.baseAddress!, b.count) } }
            }
            if n == 0 || refusedDescriptor { return .closed }
            if n < 0 { return errno == EAGAIN || errno == EWOULDBLOCK ? .wouldBlock : .closed }
            if deadline.load(ordering: .relaxed) == 0 { startDeadline() }
            if direct {
                if payloadFilled == payloadLength, let done = completeFrame(quotas: quotas) { return .frame(done) }
                if payloadFilled == payload?.count, !grow(quotas: quotas) { return .closed }
                continue
            }
            let outcome = scratch.withUnsafeBytes { feed(UnsafeRawBufferPointer(rebasing: $0[0..<n]), quotas: quotas) }
            defer { scratch.withUnsafeMutableBytes { wipeMemory(UnsafeMutableRawBufferPointer(rebasing: $0[0..<n])) } }
            switch outcome {
            case .frame(let f, let used):
                if used < n, !keepUnread(scratch, from: used, to: n, quotas: quotas) { return .closed }
                return .frame(f)
            case .more: continue
            case .broken: return .closed
            }
        }
    }

    /// One recv. A caller that may not pass descriptors gets no room for one: the kernel drops
    /// any that came (they never enter the daemon, so no close here can wait on their file
    /// system) and the connection is closed. One that may: /dev/fuse is kept for the request,
    /// anything else goes to the closer thread, and more than one at once is a refusal.
    private func receiveBytes(_ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        var truncated: Int32 = 0
        guard let closer else {
            let n = kcfs_recv_refusing_fds(fd, buffer, count, Int32(MSG_DONTWAIT), &truncated)
            if truncated != 0 { refusedDescriptor = true }
            return n
        }
        var got: Int32 = -1
        let n = kcfs_recv_with_fd(fd, buffer, count, Int32(MSG_DONTWAIT), &got, &truncated)
        if truncated != 0 { refusedDescriptor = true }
        guard got >= 0 else { return n }
        if passed == nil, kcfs_is_fuse_device(got) == 1 {
            passed = PassedDescriptor(got)
        } else {
            unwantedDescriptors += 1
            unwantedWithRequest = true
            if !closer.dispose(got) || unwantedDescriptors > Self.unwantedLimit { refusedDescriptor = true }
        }
        return n
    }

    /// Descriptors other than /dev/fuse a connection may pass before it is dropped.
    static let unwantedLimit = 4

    /// The /dev/fuse that came with the request just received, if any (the request owns it
    /// from now on: it is closed when the request is done with it), and whether a descriptor
    /// that is not /dev/fuse came too (it went to the closer).
    func takeDescriptor() -> (device: PassedDescriptor?, refused: Bool) {
        defer { passed = nil; unwantedWithRequest = false }
        return (passed, unwantedWithRequest)
    }

    private enum Fed { case frame(SecureBytes, used: Int), more, broken }

    /// Takes received bytes into the header and the payload; stops at the end of one frame.
    private func feed(_ bytes: UnsafeRawBufferPointer, quotas: Quotas) -> Fed {
        var offset = 0
        while offset < bytes.count {
            if headerFilled < 4 {
                withUnsafeMutableBytes(of: &header) { $0[headerFilled] = bytes[offset] }
                headerFilled += 1
                offset += 1
                guard headerFilled == 4 else { continue }
                let length = Int(header.0) << 24 | Int(header.1) << 16 | Int(header.2) << 8 | Int(header.3)
                guard length <= Frame.maximumLength else { return .broken }
                payloadLength = length
                payloadFilled = 0
                // The buffer grows with the bytes that arrive, never ahead of them: a peer that
                // announces the largest frame and sends nothing holds one small buffer.
                let first = min(length, max(Frame.initialCapacity, bytes.count - offset))
                guard quotas.charge(bytes: first, uid: caller.uid) else { return .broken }
                inputCharge += first
                guard let p = try? SecureBytes(count: first) else { return .broken }
                payload = p
                if length == 0, let done = completeFrame(quotas: quotas) { return .frame(done, used: offset) }
                continue
            }
            guard let p = payload else { return .broken }
            if payloadFilled == p.count { guard grow(quotas: quotas) else { return .broken }; continue }
            let take = min(bytes.count - offset, min(p.count, payloadLength) - payloadFilled)
            p.withUnsafeMutableBytes { dst in
                (dst.baseAddress! + payloadFilled).copyMemory(from: bytes.baseAddress! + offset, byteCount: take)
            }
            payloadFilled += take
            offset += take
            if payloadFilled == payloadLength, let done = completeFrame(quotas: quotas) { return .frame(done, used: offset) }
        }
        return .more
    }

    /// Enlarges the payload buffer fourfold (at most to the frame's length).
    private func grow(quotas: Quotas) -> Bool {
        guard let old = payload else { return false }
        let size = min(payloadLength, old.count * 4)
        guard quotas.charge(bytes: size, uid: caller.uid) else { return false }
        guard let bigger = try? SecureBytes(count: size) else { quotas.refund(bytes: size, uid: caller.uid); return false }
        old.withUnsafeBytes { src in
            bigger.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: payloadFilled) }
        }
        quotas.refund(bytes: old.count, uid: caller.uid)
        inputCharge += size - old.count
        old.wipe()
        payload = bigger
        return true
    }

    /// The received frame. Its buffer has exactly the frame's length: the first allocation and
    /// every growth stop at it. Its bytes stay charged until `finished`.
    private func completeFrame(quotas: Quotas) -> SecureBytes? {
        guard let p = payload, p.count == payloadLength else { return nil }
        payload = nil
        headerFilled = 0
        deadline.store(0, ordering: .relaxed)
        return p
    }

    private func keepUnread(_ source: SecureBytes, from start: Int, to end: Int? = nil, quotas: Quotas) -> Bool {
        let stop = end ?? source.count
        guard quotas.charge(bytes: stop - start, uid: caller.uid) else { return false }
        inputCharge += stop - start
        guard let rest = try? source.slice(start..<stop) else { return false }
        unread = rest
        // What was sent ahead may be the start of a frame: its deadline runs from now.
        startDeadline()
        return true
    }

    /// Returns the charge of a frame that has been handled.
    func finished(frame: SecureBytes, quotas: Quotas) {
        let n = min(frame.count, inputCharge)
        quotas.refund(bytes: n, uid: caller.uid)
        inputCharge -= n
        frame.wipe()
    }

    // MARK: Replies

    enum Sent { case done, wouldBlock, failed }

    /// Starts sending a reply; what the socket does not take now waits for `continueSending`.
    func send(_ payload: SecureBytes, quotas: Quotas) -> Sent {
        let n = UInt32(payload.count)
        replyHeader = n.bigEndian
        reply = payload
        replySent = 0
        let outcome = continueSending(quotas: quotas)
        if outcome == .wouldBlock {
            // The caller's quota holds replies it has not taken, within the same deadline.
            guard quotas.charge(bytes: payload.count, uid: caller.uid) else {
                dropReply(quotas: quotas)
                return .failed
            }
            replyCharge = payload.count
            startDeadline()
        }
        return outcome
    }

    func continueSending(quotas: Quotas) -> Sent {
        guard let body = reply else { return .done }
        while true {
            let total = 4 + body.count
            guard replySent < total else { break }
            let sent: Int = withUnsafeBytes(of: replyHeader) { head in
                body.withUnsafeBytes { b in
                    // At most two parts (the rest of the header, the body), on the stack.
                    withUnsafeTemporaryAllocation(of: iovec.self, capacity: 2) { parts in
                        var count = 0
                        if replySent < 4 {
                            parts[0] = iovec(iov_base: UnsafeMutableRawPointer(mutating: head.baseAddress! + replySent), iov_len: 4 - replySent)
                            count = 1
                            if b.count > 0 {
                                parts[1] = iovec(iov_base: UnsafeMutableRawPointer(mutating: b.baseAddress!), iov_len: b.count)
                                count = 2
                            }
                        } else {
                            parts[0] = iovec(iov_base: UnsafeMutableRawPointer(mutating: b.baseAddress! + (replySent - 4)),
                                             iov_len: b.count - (replySent - 4))
                            count = 1
                        }
                        var message = msghdr()
                        message.msg_iov = parts.baseAddress
                        message.msg_iovlen = count
                        return retryingOnInterrupt { sendmsg(fd, &message, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                    }
                }
            }
            if sent < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
                dropReply(quotas: quotas)
                return .failed
            }
            replySent += sent
        }
        dropReply(quotas: quotas)
        deadline.store(0, ordering: .relaxed)
        return .done
    }

    private func dropReply(quotas: Quotas) {
        reply?.wipe()
        reply = nil
        quotas.refund(bytes: replyCharge, uid: caller.uid)
        replyCharge = 0
    }

    /// Wipes every buffer and returns the whole charge; the descriptor is closed by the server.
    func release(quotas: Quotas) {
        passed = nil
        payload?.wipe()
        payload = nil
        unread?.wipe()
        unread = nil
        dropReply(quotas: quotas)
        quotas.refund(bytes: inputCharge, uid: caller.uid)
        inputCharge = 0
    }

    static func nowMillis() -> Int64 { monotonicMillis() }
}
