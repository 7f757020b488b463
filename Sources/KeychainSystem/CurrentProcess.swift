import CProcess
import Glibc

/// The running process: who it runs as, its program, its environment, how it ends.
public enum CurrentProcess {
    /// The real user id (getuid(2)).
    public static var userID: UInt32 { getuid() }

    /// The effective user id, the one permission checks use (geteuid(2)).
    public static var effectiveUserID: UInt32 { geteuid() }

    /// The real group id (getgid(2)).
    public static var groupID: UInt32 { getgid() }

    /// The process id (getpid(2)).
    public static var id: Int32 { getpid() }

    /// The size of a memory page (sysconf(3) `_SC_PAGESIZE`).
    public static var pageSize: Int { Int(sysconf(Int32(_SC_PAGESIZE))) }

    /// How many bytes the process may lock in memory (getrlimit(2) `RLIMIT_MEMLOCK`, the soft
    /// limit); nil when unlimited or unreadable.
    public static var lockedMemoryLimit: Int? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue), &limit) == 0,
              limit.rlim_cur != rlim_t.max else { return nil }  // RLIM_INFINITY
        return Int(clamping: limit.rlim_cur)
    }

    /// No core dumps and no ptrace by the same user (RLIMIT_CORE 0, PR_SET_DUMPABLE 0), for a
    /// process that holds or relays secrets. - Throws: the `Errno` of the call that failed.
    public static func harden() throws(Errno) {
        _ = try systemCall { kcfs_harden_process() }
    }

    /// Gives the heap's free pages back to the system (malloc_trim(3)), after a large burst of
    /// short-lived allocations (a listing of a big directory, a dropped cache): glibc keeps
    /// them in its arenas otherwise, and the resident size never comes down.
    @discardableResult
    public static func releaseFreeHeap() -> Bool { kcfs_release_free_heap() == 1 }

    /// Keeps the heap's free memory returnable, for a long-lived process with many threads: the
    /// trim threshold at 1 MiB and blocks of 128 KiB and more in mappings of their own. glibc
    /// otherwise raises both thresholds each time it frees a large block (to 32 and 64 MiB at
    /// most); blocks of megabytes then come from the threads' arenas, and an arena's free top
    /// below the raised trim threshold stays resident for good (malloc_trim(3) trims only the
    /// main arena's top). Call it before the process starts threads.
    @discardableResult
    public static func keepFreeHeapReturnable() -> Bool { kcfs_fix_heap_thresholds(Self.heapTrimThreshold, Self.heapMapThreshold) == 0 }

    /// The thresholds `keepFreeHeapReturnable` sets.
    public static let heapTrimThreshold: Int32 = 1 << 20
    public static let heapMapThreshold: Int32 = 128 << 10

    /// The path of the running program (`/proc/self/exe`).
    public static func executablePath() throws(Errno) -> String {
        try FileSystem.destination(ofLink: "/proc/self/exe")
    }

    /// The machine's host name (gethostname(2)).
    public static func hostName() throws(Errno) -> String {
        var buf = [CChar](repeating: 0, count: 256)
        _ = try systemCall { gethostname(&buf, buf.count - 1) }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The value of an environment variable, nil when it is unset or empty (getenv(3)).
    public static func environment(_ name: String) -> String? {
        guard let v = getenv(name), v.pointee != 0 else { return nil }
        return String(cString: v)
    }

    /// Sets an environment variable (setenv(3)); with `replacing` false a value already set,
    /// even an empty one, is kept. Not safe while other threads read the environment.
    public static func setEnvironment(_ name: String, to value: String, replacing: Bool) throws(Errno) {
        _ = try systemCall { setenv(name, value, replacing ? 1 : 0) }
    }

    /// Ends the process with `status` (exit(3)).
    public static func exit(_ status: Int32) -> Never { Glibc.exit(status) }

    /// Replaces this process with the program at `path` (execv(2)), keeping its pid and
    /// environment; `arguments` starts with the name the program sees as `argv[0]`.
    /// Returns only when that fails, with why.
    public static func replace(with path: String, arguments: [String]) -> Errno {
        var cArgs: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        execv(path, &cArgs)
        return Errno.current
    }
}
