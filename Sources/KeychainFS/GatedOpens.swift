import CFuse
import Glibc
import KeychainfsAccess
import KeychainCore

/// Opens of presence-gated files wait for the approval program here, on a few threads of their
/// own, so the kernel's workers go on serving every other request. At most `running` approvals
/// run at once and `queued` more wait, half of all places at most for one uid; an open past
/// that fails at once with EAGAIN.
final class GatedOpens: @unchecked Sendable {
    static let running = 4
    static let queued = 16
    static let perUID = (running + queued) / 2

    private let mutex = PThreadMutex()
    private var waiting: [() -> Void] = []
    private var threads = 0
    private var byUID: [UInt32: Int] = [:]

    /// Runs `job` on a gated-open thread; false (nothing run) when the queue, or the caller's
    /// share of it, is full.
    func submit(uid: UInt32, _ job: @escaping () -> Void) -> Bool {
        let counted = { [self] in
            job()
            mutex.withLock {
                byUID[uid, default: 1] -= 1
                if byUID[uid] == 0 { byUID[uid] = nil }
            }
        }
        let startThread = mutex.withLock { () -> Bool? in
            guard byUID[uid, default: 0] < Self.perUID else { return nil }
            let start: Bool
            if threads < Self.running {
                threads += 1
                start = true
            } else if waiting.count < Self.queued {
                waiting.append(counted)
                start = false
            } else {
                return nil
            }
            byUID[uid, default: 0] += 1
            return start
        }
        guard let startThread else { return false }
        if startThread {
            KeychainFS.startThread { [self] in work(first: counted) }
        }
        return true
    }

    /// Runs jobs until none waits; the thread then ends (an idle mount holds no thread).
    private func work(first: @escaping () -> Void) {
        var job: (() -> Void)? = first
        while let next = job {
            next()
            job = mutex.withLock { () -> (() -> Void)? in
                if waiting.isEmpty {
                    threads -= 1
                    return nil
                }
                return waiting.removeFirst()
            }
        }
    }
}

extension MountServer {
    /// Hands a gated open to the approval threads: the program's answer comes back into `open`
    /// (with the kernel's file info copied, since libfuse's lives on the worker's stack), which
    /// answers the request from there. Called with no lock held.
    func openAfterApproval(_ req: FuseRequest, ino: UInt64, fi: UnsafeMutablePointer<fuse_file_info>,
                           ref: PersistentRef, attributes: Attributes, caller: CallerIdentity) {
        // Inside a request's handler the session is live; the share keeps it so until the answer.
        guard borrowSession() != nil else { return req.error(EIO) }
        let info = UnsafeMutablePointer<fuse_file_info>.allocate(capacity: 1)
        info.initialize(to: fi.pointee)
        let accepted = gatedOpens.submit(uid: caller.uid) { [self] in
            let status = policy.approvePresence(ref: ref, attributes: attributes, caller: caller)
            open(req, ino: ino, fi: info, approval: (ref, status))
            info.deallocate()
            returnSession()
        }
        if !accepted {
            info.deallocate()
            returnSession()
            req.error(EAGAIN)
        }
    }
}
