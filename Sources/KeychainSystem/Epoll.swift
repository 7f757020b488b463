import CProcess
import Glibc

/// An epoll set (epoll(7)) whose entries carry a 64-bit tag instead of a pointer, so a
/// descriptor's owner is looked up by tag and nothing is retained through the kernel.
/// Safe to use from many threads at once: the kernel serializes the set.
public struct Epoll: Sendable {
    /// What an entry waits for; `oneShot` disarms it after one event until `rearm`.
    public struct Events: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        public static let readable = Events(rawValue: EPOLLIN.rawValue)
        public static let writable = Events(rawValue: EPOLLOUT.rawValue)
        /// The peer shut down its writing half.
        public static let peerClosed = Events(rawValue: EPOLLRDHUP.rawValue)
        public static let oneShot = Events(rawValue: EPOLLONESHOT.rawValue)
    }

    /// One event: the entry's tag and what happened.
    public struct Event: Sendable {
        public let tag: UInt64
        public let events: Events
    }

    public let descriptor: Int32

    /// - Throws: the `Errno` of epoll_create1 (out of descriptors, of memory).
    public init() throws(Errno) {
        descriptor = try systemCall { epoll_create1(Int32(EPOLL_CLOEXEC)) }
    }

    public func add(_ fd: Int32, tag: UInt64, events: Events) throws(Errno) {
        try control(EPOLL_CTL_ADD, fd, tag: tag, events: events)
    }

    /// Arms an entry again (after a one-shot event) or changes what it waits for.
    public func rearm(_ fd: Int32, tag: UInt64, events: Events) throws(Errno) {
        try control(EPOLL_CTL_MOD, fd, tag: tag, events: events)
    }

    public func remove(_ fd: Int32) throws(Errno) {
        _ = try systemCall { epoll_ctl(descriptor, EPOLL_CTL_DEL, fd, nil) }
    }

    /// Waits for one event; nil when `timeoutMilliseconds` (-1: none) passed or a signal came.
    public func next(timeoutMilliseconds: Int32 = -1) -> Event? {
        var e = epoll_event()
        guard epoll_wait(descriptor, &e, 1, timeoutMilliseconds) == 1 else { return nil }
        return Event(tag: e.data.u64, events: Events(rawValue: e.events))
    }

    public func close() { _ = Glibc.close(descriptor) }

    private func control(_ op: Int32, _ fd: Int32, tag: UInt64, events: Events) throws(Errno) {
        var e = epoll_event(events: events.rawValue, data: epoll_data_t(u64: tag))
        _ = try systemCall { epoll_ctl(descriptor, op, fd, &e) }
    }
}

/// A counter descriptor (eventfd(2)) that wakes whoever polls it.
public struct EventCounter: Sendable {
    public let descriptor: Int32

    /// - Parameter nonBlocking: reads and writes return EAGAIN instead of waiting.
    public init(nonBlocking: Bool = false) throws(Errno) {
        let flags = EFD_CLOEXEC | (nonBlocking ? EFD_NONBLOCK : 0)
        descriptor = try systemCall { eventfd(0, Int32(flags)) }
    }

    /// Adds one: a poller wakes.
    public func signal() {
        var one: UInt64 = 1
        _ = retryingOnInterrupt { write(descriptor, &one, 8) }
    }

    /// Takes the count (0 when there was none and the counter does not block).
    @discardableResult
    public func drain() -> UInt64 {
        var n: UInt64 = 0
        return retryingOnInterrupt { read(descriptor, &n, 8) } == 8 ? n : 0
    }

    public func close() { _ = Glibc.close(descriptor) }
}

/// A periodic timer descriptor (timerfd(2) on the monotonic clock) that is readable on each tick.
public struct PeriodicTimer: Sendable {
    public let descriptor: Int32

    public init(everySeconds seconds: Int) throws(Errno) {
        descriptor = try systemCall { timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC | TFD_NONBLOCK)) }
        var spec = itimerspec(it_interval: timespec(tv_sec: seconds, tv_nsec: 0), it_value: timespec(tv_sec: seconds, tv_nsec: 0))
        do {
            _ = try systemCall { timerfd_settime(descriptor, 0, &spec, nil) }
        } catch {
            _ = Glibc.close(descriptor)
            throw error
        }
    }

    /// Takes the ticks since the last read.
    @discardableResult
    public func drain() -> UInt64 {
        var ticks: UInt64 = 0
        return read(descriptor, &ticks, 8) == 8 ? ticks : 0
    }

    public func close() { _ = Glibc.close(descriptor) }
}
