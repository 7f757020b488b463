import Glibc

/// The resident memory of a PostgreSQL server on this machine, from /proc: its postmaster
/// (the parent of a backend) and every child of it. `VmRSS` counts the shared buffers each
/// process touched once per process; `RssAnon` is each one's own memory.
struct ServerMemory {
    var processes = 0
    var residentBytes: Int64 = 0
    var anonymousBytes: Int64 = 0

    /// - Parameter backend: the process id of one of the server's backends.
    /// - Returns: nil when /proc does not show it (a server on another machine).
    static func of(backend: Int32) -> ServerMemory? {
        guard let postmaster = parent(of: backend) else { return nil }
        var m = ServerMemory()
        m.add(postmaster)
        guard let dir = opendir("/proc") else { return nil }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let pid = Int32(name), parent(of: pid) == postmaster { m.add(pid) }
        }
        return m
    }

    private mutating func add(_ pid: Int32) {
        guard let status = readText("/proc/\(pid)/status") else { return }
        processes += 1
        for line in status.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })  // "VmRSS:\t   43340 kB"
            guard fields.count >= 2, let kib = Int64(fields[1]) else { continue }
            if fields[0] == "VmRSS:" { residentBytes += kib * 1024 }
            if fields[0] == "RssAnon:" { anonymousBytes += kib * 1024 }
        }
    }

    /// The parent pid from /proc/PID/stat (the field after the command's closing parenthesis).
    private static func parent(of pid: Int32) -> Int32? {
        guard let stat = readText("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        let after = stat[stat.index(after: close)...].split(separator: " ")
        return after.count >= 2 ? Int32(after[1]) : nil
    }
}

/// A small file's text; nil when it cannot be read.
private func readText(_ path: String) -> String? {
    guard let f = fopen(path, "r") else { return nil }
    defer { fclose(f) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&buf, 1, buf.count, f)
        if n <= 0 { break }
        out += buf[0..<n]
    }
    return String(decoding: out, as: UTF8.self)
}
