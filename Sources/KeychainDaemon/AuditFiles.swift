import KeychainCore
import KeychainCrypto
import KeychainSystem

/// The files of one audit log: `VAULT.audit`, and the files rotation moved aside,
/// `VAULT.audit.1` (the oldest), `.2`, ... One chain runs through them in that order.
struct AuditFiles {
    let path: String

    /// The rotated files, oldest first.
    func rotated() -> [(number: Int, path: String)] {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) } ?? "."
        let prefix = (slash.map { String(path[path.index(after: $0)...]) } ?? path) + "."
        guard let names = try? FileSystem.entries(of: directory.isEmpty ? "/" : directory) else { return [] }
        var found: [(Int, String)] = []
        for name in names {
            guard name.hasPrefix(prefix), let n = Int(name.dropFirst(prefix.count)), n > 0,
                  name.dropFirst(prefix.count).allSatisfy(\.isASCII) else { continue }
            found.append((n, path + ".\(n)"))
        }
        return found.sorted { $0.0 < $1.0 }
    }

    /// Every file of the chain, oldest first, the current one last.
    func all() -> [String] { rotated().map(\.path) + [path] }

    /// The name the next rotation gives the current file.
    func nextRotatedPath() -> String { path + ".\((rotated().last?.number ?? 0) + 1)" }

    /// The TIME of a file's last line (read from its end), nil when it has none.
    static func lastTime(of file: String) -> Int64? {
        guard let fd = try? FileDescriptor.open(file, .readOnly, options: .noFollow) else { return nil }
        defer { try? fd.close() }
        guard let size = try? fd.status().size, size > 0 else { return nil }
        let length = Int(min(size, 4096))
        var tail = [UInt8](repeating: 0, count: length)
        let read = tail.withUnsafeMutableBytes { try? fd.read(fromAbsoluteOffset: size - Int64(length), into: $0) }
        guard read == length else { return nil }
        let body = tail.last == 10 ? tail.dropLast() : tail[...]
        let start = body.lastIndex(of: 10).map { $0 + 1 } ?? body.startIndex
        let fields = body[start...].split(separator: 9, maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count >= 2 else { return nil }
        return Int64(String(decoding: fields[1], as: UTF8.self))
    }

    /// Where a rotation builds the new file before it takes the current one's place.
    var freshPath: String { path + ".new" }

    /// Undoes a rotation a crash interrupted: a new file that never took its place is removed,
    /// and a newest rotated name that is still the current file (linked, not yet replaced) too.
    func recoverRotation() {
        try? FileSystem.remove(freshPath)
        guard let newest = rotated().last else { return }
        if let a = try? FileSystem.status(of: newest.path), let b = try? FileSystem.status(of: path), a.isSameFile(as: b) {
            try? FileSystem.remove(newest.path)
        }
    }
}

/// Where a chain check stopped: the file and its line (1-based).
struct AuditBreak: Equatable {
    var file: String
    var line: Int
}

/// Checks one chain across files: each line must carry the next SEQ and the keyed hash of the
/// previous line's CHAIN and its own fields. The oldest file present may begin with a `rotated`
/// line whose older files were removed: the chain then starts from the CHAIN that line names.
struct AuditChainCheck {
    let key: SecureBytes
    private(set) var previous = [UInt8](repeating: 0, count: 32)
    private(set) var expectedSeq: Int64 = 1
    private(set) var lines = 0
    private var started = false

    init(key: SecureBytes) { self.key = key }

    /// Checks one file's text; the number of the first bad line, if any.
    mutating func check(_ text: Substring) -> Int? {
        var number = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty {
            number += 1
            lines += 1
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 8, let seq = Int64(fields[0]), let stored = AuditLog.unhex(String(fields[7])) else { return number }
            if !started, seq != 1, fields[4] == Substring(AuditEvent.rotated.rawValue),
               let from = Self.linkedChain(fields[5]) {
                previous = from
                expectedSeq = seq
            }
            started = true
            guard seq == expectedSeq else { return number }
            var next = previous
            Array(fields[0..<7].joined(separator: "\t").utf8).withUnsafeBytes { KeyedHash.extend(&next, with: $0, key: key) }
            guard next == stored else { return number }
            previous = next
            expectedSeq += 1
        }
        return nil
    }

    /// The `chain=HEX` of a `rotated` line's detail: the last CHAIN of the file before it. The
    /// last part of the detail: the file name before it is the vault's, and may hold a space.
    static func linkedChain(_ detail: Substring) -> [UInt8]? {
        guard let part = detail.split(separator: " ").last, part.hasPrefix("chain=") else { return nil }
        return AuditLog.unhex(String(part.dropFirst("chain=".count)))
    }
}
