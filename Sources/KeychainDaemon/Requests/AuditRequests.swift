import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol

/// `audit`: the log's lines (filtered here), `--verify` and `rotate`. Reading the log is the
/// administrators' and that of callers entitled to a group that grants it (`--may-audit`); a
/// reference is resolved to its item's names only for a caller entitled to that item, so
/// anyone else sees the reference alone. Checking and rotating are the administrators'.
struct AuditRequests: RequestFamily {
    let context: RequestContext

    private func openLog() throws -> AuditLog {
        guard let log = context.control.auditLog else { throw KeychainStatus.interactionNotAllowed }
        return log
    }

    func verify() throws -> Outcome {
        let (lines, files, bad) = try openLog().verify()
        return .reply(AuditChain(lines: Int64(lines), files: Int64(files),
                                 firstBreak: bad.map { AuditBreakPoint(file: $0.file, line: Int64($0.line)) }))
    }

    func rotate() throws -> Outcome { .reply(AuditRotation(rotated: try openLog().rotate())) }

    func read(_ request: AuditRequest) throws -> Outcome {
        let log = try openLog()
        guard case .read(let query) = request else { throw KeychainStatus.param }
        let filter = try AuditFilter(query, refsNamed: { try refs(service: $0, account: $1) })
        var lines = log.contents(since: filter.since).split(separator: "\n").filter(filter.keeps)
        // One reply must fit a frame: the newest lines that fit, and how many older ones did not.
        var bytes = 0
        var kept = lines.count
        while kept > 0, bytes + lines[kept - 1].utf8.count + 1 <= Self.replyBudget {
            bytes += lines[kept - 1].utf8.count + 1
            kept -= 1
        }
        let omitted = kept
        lines.removeFirst(omitted)
        var names = ""
        var seen = Set<Substring>()
        let entitled = groups.entitled
        for line in lines {
            // Names share the frame with the lines: past 4 MiB of them, references stay bare.
            guard names.utf8.count < 4 << 20, let ref = AuditFilter.reference(in: line), seen.insert(ref).inserted,
                  let found = name(of: ref, groups: entitled) else { continue }
            names += "\(ref)\t\(found.0)\t\(found.1)\n"
        }
        return .reply(AuditLines(log: lines.map { $0 + "\n" }.joined(), names: names, omitted: omitted > 0 ? Int64(omitted) : nil))
    }

    /// Bytes of lines one reply carries: a frame's room less the names and the framing.
    static let replyBudget = 12 << 20

    /// The names of the item `hex` refers to, if the caller is entitled to it: service (server
    /// of an internet password, label of a key or certificate) and account, control characters
    /// escaped as the log escapes them.
    private func name(of hex: Substring, groups: [String]) -> (String, String)? {
        guard !groups.isEmpty, let bytes = Hex.decode(String(hex)), let ref = PersistentRef(bytes: bytes) else { return nil }
        let query: Attributes = [.valuePersistentRef: .data(ref.bytes), .returnAttributes: .bool(true), .synchronizable: .synchronizableAny]
        guard case .value(let v)? = try? vault.copyMatching(query, accessGroups: groups), let a = v.item?.attributes else { return nil }
        let first = a[.service] ?? a[.server] ?? a[.label]
        return (Self.clean(first?.stringValue ?? ""), Self.clean(a[.account]?.stringValue ?? ""))
    }

    /// The references of the generic and internet passwords the caller may see with this
    /// service (or server) and account; an empty part matches any.
    private func refs(service: String, account: String) throws -> Set<String> {
        var found = Set<String>()
        for (itemClass, serviceKey) in [(ItemClass.genericPassword, AttributeKey.service), (.internetPassword, .server)] {
            var query: Attributes = [.class: .itemClass(itemClass), .returnPersistentRef: .bool(true),
                                     .matchLimit: .matchLimitAll, .synchronizable: .synchronizableAny]
            if !service.isEmpty { query[serviceKey] = .string(service) }
            if !account.isEmpty { query[.account] = .string(account) }
            guard case .array(let hits)? = try? vault.copyMatching(query, accessGroups: groups.entitled) else { continue }
            for case .persistentRef(let bytes) in hits { found.insert(Hex.encode(bytes)) }
        }
        guard !found.isEmpty else { throw KeychainStatus.itemNotFound }
        return found
    }

    private static func clean(_ s: String) -> String {
        var out: [UInt8] = []
        AuditLog.appendClean(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}

/// Which lines `audit` shows (an `AuditQuery`): `since` and `until` (epoch seconds, inclusive),
/// `uid`, `events` and `item` (a reference in hex, or the items found by service/account).
struct AuditFilter {
    var since: Int64?
    var until: Int64?
    var uid: Int64?
    var events: Set<Substring>?
    var refs: Set<String>?

    /// The query's names checked when it was decoded; `refsNamed` finds the items of a
    /// service and account.
    init(_ query: AuditQuery, refsNamed: (String, String) throws -> Set<String>) throws {
        since = query.since
        until = query.until
        uid = query.uid
        events = query.events.map { Set($0.map { Substring($0) }) }
        switch query.item {
        case .reference(let hex)?: refs = [hex]
        case .named(let service, let account)?: refs = try refsNamed(service, account)
        case nil: break
        }
    }

    func keeps(_ line: Substring) -> Bool {
        let f = line.split(separator: "\t", maxSplits: 6, omittingEmptySubsequences: false)
        guard f.count == 7 else { return since == nil && until == nil && uid == nil && events == nil && refs == nil }
        if let since { guard let t = Int64(f[1]), t >= since else { return false } }
        if let until { guard let t = Int64(f[1]), t <= until else { return false } }
        if let uid { guard Int64(f[2]) == uid else { return false } }
        if let events { guard events.contains(f[4]) else { return false } }
        if let refs { guard let r = Self.reference(in: line), refs.contains(String(r)) else { return false } }
        return true
    }

    /// The item reference a line's DETAIL starts with: 40 hex digits (class and UUID).
    static func reference(in line: Substring) -> Substring? {
        let f = line.split(separator: "\t", maxSplits: 6, omittingEmptySubsequences: false)
        guard f.count == 7 else { return nil }
        let ref = f[5].prefix { $0 != " " }
        guard ref.utf8.count == 40, ref.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else { return nil }
        return ref
    }
}
