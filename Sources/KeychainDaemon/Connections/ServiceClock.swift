import KeychainSystem
import Glibc
import KeychainProtocol

/// How long requests wait inside the daemon (from the frame read to the handler's start, a
/// slow worker's queue included) and how long their handlers run, the owner's and root's
/// apart from everyone else's: what the daemon controls of an owner's latency under another
/// uid's load. Kept as counts in buckets that grow by a quarter (1 us to about 70 s), so a
/// percentile is within 25% and recording costs one short lock.
final class ServiceClock: Sendable {
    private struct Histogram {
        var counts = [Int64](repeating: 0, count: ServiceClock.buckets)
        var total: Int64 = 0

        mutating func add(_ micros: Double) {
            counts[ServiceClock.bucket(of: micros)] += 1
            total += 1
        }

        /// The upper bound of the bucket that holds the `fraction` quantile, in microseconds.
        func quantile(_ fraction: Double) -> Int64 {
            guard total > 0 else { return 0 }
            let rank = Int64((Double(total) * fraction).rounded(.up))
            var seen: Int64 = 0
            for (i, n) in counts.enumerated() {
                seen += n
                if seen >= max(rank, 1) { return Int64(ServiceClock.upperBound(of: i).rounded(.up)) }
            }
            return Int64(ServiceClock.upperBound(of: counts.count - 1))
        }
    }

    private struct Timings {
        var wait = Histogram()
        var service = Histogram()

        mutating func add(wait seconds: Double, service: Double) {
            wait.add(seconds * 1e6)
            self.service.add(service * 1e6)
        }

        var summary: TimingSummary {
            TimingSummary(requests: wait.total, waitMedian: wait.quantile(0.5), waitP99: wait.quantile(0.99),
                          serviceMedian: service.quantile(0.5), serviceP99: service.quantile(0.99))
        }
    }

    static let buckets = 80
    private static let growth = 1.25

    private let privileged = Locked(Timings())
    private let others = Locked(Timings())

    /// One request's wait and service, in seconds.
    func record(privileged isPrivileged: Bool, wait: Double, service: Double) {
        if isPrivileged {
            privileged.withLock { $0.add(wait: wait, service: service) }
        } else {
            others.withLock { $0.add(wait: wait, service: service) }
        }
    }

    func summary(reset: Bool) -> ServiceTimes {
        func take(_ m: Locked<Timings>) -> TimingSummary {
            m.withLock { t in
                defer { if reset { t = Timings() } }
                return t.summary
            }
        }
        return ServiceTimes(privileged: take(privileged), others: take(others))
    }

    static func bucket(of micros: Double) -> Int {
        guard micros > 1 else { return 0 }
        return min(buckets - 1, Int((log(micros) / log(growth)).rounded(.up)))
    }

    static func upperBound(of bucket: Int) -> Double { pow(growth, Double(bucket)) }
}
