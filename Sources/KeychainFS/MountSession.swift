/// The libfuse session while the loop runs. Notifications and `unmount` borrow it through
/// `withSession`; the loop thread's teardown waits for the last borrower, so no call uses a
/// destroyed session, and no caller ever waits on another's notification.
struct SessionShare {
    var session: OpaquePointer?
    var borrowers = 0
    var pendingTeardown: (() -> Void)?
    var started = false
}

extension MountServer {
    /// True once the kernel side is gone (unmounted with umount, or by `unmount()`).
    public var hasEnded: Bool { session.withLock { $0.started && $0.session == nil } }

    /// Runs `body` with the live session; nothing once the loop has ended.
    func withSession(_ body: (OpaquePointer) -> Void) {
        guard let se = borrowSession() else { return }
        body(se)
        returnSession()
    }

    /// Takes a share of the live session (nil once the loop has ended), for work that answers a
    /// request after its handler returned: the session outlives every share. Give it back with
    /// `returnSession`.
    func borrowSession() -> OpaquePointer? {
        session.withLock { s -> OpaquePointer? in
            if s.session != nil { s.borrowers += 1 }
            return s.session
        }
    }

    func returnSession() {
        let teardown = session.withLock { s -> (() -> Void)? in
            s.borrowers -= 1
            guard s.borrowers == 0 else { return nil }
            defer { s.pendingTeardown = nil }
            return s.pendingTeardown
        }
        teardown?()
    }

    /// Records the session the loop serves (called before the loop starts).
    func began(_ se: OpaquePointer) {
        session.withLock { s in
            s.session = se
            s.started = true
        }
    }

    /// Ends the session once the loop has returned: `teardown` (unmount, destroy) runs now, or
    /// when the last notification that borrowed the session returns.
    func ended(_ teardown: @escaping (OpaquePointer) -> Void) {
        let now = session.withLock { s -> OpaquePointer? in
            guard let se = s.session else { return nil }
            s.session = nil
            if s.borrowers == 0 { return se }
            s.pendingTeardown = { teardown(se) }
            return nil
        }
        if let now { teardown(now) }
    }
}
