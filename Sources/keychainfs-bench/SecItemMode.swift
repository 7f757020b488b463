import Glibc
import Security
import Synchronization

/// `keychainfs-bench secitem --service S --account A [--threads N] [--seconds T]`: SecItemCopyMatching
/// with kSecReturnData for one item through `import Security`, from N threads sharing the
/// module's one connection, as an app's threads would. Prints `threads= ops= rate= errors=`.
func secitemMode(_ args: [String]) {
    var service = "bench", account = "secret", threads = 1, seconds = 3.0
    var i = 0
    while i < args.count {
        let value = i + 1 < args.count ? args[i + 1] : ""
        switch args[i] {
        case "--service": service = value
        case "--account": account = value
        case "--threads": threads = Int(value) ?? 1
        case "--seconds": seconds = Double(value) ?? 3
        default: fail("secitem: unknown option \(args[i])")
        }
        i += 2
    }
    // Each thread builds its own query dictionary, as an app's code would.
    let (svc, acct) = (service, account)
    final class Counter: Sendable {
        let ops = Atomic(0)
        let errors = Atomic(0)
    }
    let counters = (0..<threads).map { _ in Counter() }
    let deadline = monotonic() + seconds
    let workers = counters.map { c in
        startJoinableThread {
            let query = [kSecClass: kSecClassGenericPassword, kSecAttrService: svc, kSecAttrAccount: acct,
                         kSecReturnData: kCFBooleanTrue!] as CFDictionary
            while monotonic() < deadline {
                var result: CFTypeRef?
                if SecItemCopyMatching(query, &result) == errSecSuccess, result is NSData {
                    c.ops.add(1, ordering: .relaxed)
                } else {
                    c.errors.add(1, ordering: .relaxed)
                }
            }
        }
    }
    for t in workers { pthread_join(t, nil) }
    let ops = counters.reduce(0) { $0 + $1.ops.load(ordering: .relaxed) }
    let errors = counters.reduce(0) { $0 + $1.errors.load(ordering: .relaxed) }
    emit("threads=\(threads) seconds=\(plain(seconds, 1)) ops=\(ops) errors=\(errors) rate=\(plain(Double(ops) / seconds, 0))")
    if ops == 0 || errors > 0 { exit(1) }
}
