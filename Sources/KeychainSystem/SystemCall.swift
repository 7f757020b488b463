import Glibc

/// Repeats a system call while a signal interrupts it (-1 with `EINTR`): the code base's one
/// retry loop. Returns the call's last result; when that is -1, `errno` says why.
@inlinable
public func retryingOnInterrupt<Result: BinaryInteger>(_ call: () -> Result) -> Result {
    while true {
        let result = call()
        if result != -1 || errno != EINTR { return result }
    }
}

/// Like `retryingOnInterrupt`, but the failure is thrown as an `Errno`.
@inlinable
public func systemCall<Result: BinaryInteger>(_ call: () -> Result) throws(Errno) -> Result {
    let result = retryingOnInterrupt(call)
    if result == -1 { throw Errno.current }
    return result
}
