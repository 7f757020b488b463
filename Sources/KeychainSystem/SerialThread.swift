/// One thread of the system's own that runs the work it is given, in order, until `finish`.
///
/// For a run of large jobs handed off one after another (the batches a long sync read opens
/// ahead): glibc gives each thread a malloc arena of its own and keeps a freed arena's pages
/// resident, so a new thread per job leaves one job's worth of memory behind in each arena
/// it touched; one thread reuses its own.
public final class SerialThread: Sendable {
    private struct State: Sendable {
        var jobs: [@Sendable () -> Void] = []
        var finishing = false
    }

    private let state = ConditionLock(State())

    /// Starts the thread.
    /// - Throws: the `Errno` pthread_create returned (`EAGAIN` at the process's thread limit).
    public init() throws(Errno) {
        try SystemThread.detach { [state] in
            while let job = state.wait({ s -> Decision<(@Sendable () -> Void)?> in
                if !s.jobs.isEmpty { return .done(s.jobs.removeFirst()) }
                return s.finishing ? .done(nil) : .wait
            }) {
                job()
            }
        }
    }

    private typealias Decision<R> = ConditionLock<State>.Decision<R>

    /// Runs `job` on the thread after the jobs given before it; false, and `job` is not run,
    /// once `finish` was called.
    @discardableResult
    public func run(_ job: @escaping @Sendable () -> Void) -> Bool {
        state.withLockWakingWaiters { s in
            guard !s.finishing else { return false }
            s.jobs.append(job)
            return true
        }
    }

    /// The thread ends once the jobs given so far have run; `run` refuses jobs from now on.
    public func finish() {
        state.withLockWakingWaiters { $0.finishing = true }
    }

    deinit { finish() }
}
