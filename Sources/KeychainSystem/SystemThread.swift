import Glibc

/// Threads of the system's own (pthreads), for work that blocks in system calls for as long as
/// a peer keeps a connection open, which Dispatch's shared pool is not meant to carry.
public enum SystemThread {
    /// Runs `body` on a new detached thread.
    /// - Throws: the `Errno` pthread_create returned (`EAGAIN` at the process's thread limit).
    public static func detach(_ body: @escaping @Sendable () -> Void) throws(Errno) {
        final class Box: Sendable {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            throw Errno(rawValue: rc)
        }
        pthread_detach(thread)
    }
}
