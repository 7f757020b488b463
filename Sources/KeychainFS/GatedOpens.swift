import Glibc
import KeychainfsAccess
import KeychainCore
import Synchronization

/// Opens of presence-gated files wait for the approval program here, on a few threads of their
/// own, so the kernel's workers go on serving every other request. At most `running` approvals
/// run at once and `queued` more wait, half of all places at most for one uid; an open past
/// that fails at once with EAGAIN.
final class GatedOpens: Sendable {
    static let running = 4
    static let queued = 16
    static let perUID = (running + queued) / 2

    private struct Queue: Sendable {
        var waiting: [@Sendable () -> Void] = []
        var threads = 0
        var byUID: [UInt32: Int] = [:]
    }
    private let queue = Mutex(Queue())

    /// Runs `job` on a gated-open thread; false (nothing run) when the queue, or the caller's
    /// share of it, is full.
    func submit(uid: UInt32, _ job: @escaping @Sendable () -> Void) -> Bool {
        let counted: @Sendable () -> Void = { [self] in
            job()
            queue.withLock { q in
                q.byUID[uid, default: 1] -= 1
                if q.byUID[uid] == 0 { q.byUID[uid] = nil }
            }
        }
        let startThread = queue.withLock { q -> Bool? in
            guard q.byUID[uid, default: 0] < Self.perUID else { return nil }
            let start: Bool
            if q.threads < Self.running {
                q.threads += 1
                start = true
            } else if q.waiting.count < Self.queued {
                q.waiting.append(counted)
                start = false
            } else {
                return nil
            }
            q.byUID[uid, default: 0] += 1
            return start
        }
        guard let startThread else { return false }
        if startThread {
            KeychainFS.startThread { [self] in work(first: counted) }
        }
        return true
    }

    /// Runs jobs until none waits; the thread then ends (an idle mount holds no thread).
    private func work(first: @escaping @Sendable () -> Void) {
        var job: (@Sendable () -> Void)? = first
        while let next = job {
            next()
            job = queue.withLock { q -> (@Sendable () -> Void)? in
                if q.waiting.isEmpty {
                    q.threads -= 1
                    return nil
                }
                return q.waiting.removeFirst()
            }
        }
    }
}

extension MountServer {
    /// Hands a gated open to the approval threads: the program's answer comes back into `open`,
    /// which answers the request from there. Called with no lock held.
    func openAfterApproval(_ req: any FileRequest, ino: UInt64, opened: OpenInfo,
                           ref: PersistentRef, attributes: Attributes, caller: CallerIdentity) {
        // Inside a request's handler the session is live; the share keeps it so until the answer.
        guard borrowSession() != nil else { return req.error(EIO) }
        let accepted = gatedOpens.submit(uid: caller.uid) { [self] in
            let status = policy.approvePresence(ref: ref, attributes: attributes, caller: caller)
            open(req, ino: ino, opened: opened, approval: (ref, status))
            returnSession()
        }
        if !accepted {
            returnSession()
            req.error(EAGAIN)
        }
    }
}
