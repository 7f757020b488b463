import KeychainSystem

/// The vault file's length against the page count SQLite will read (docs/vault-format.md,
/// "File length"). SQLite reads the missing bytes of a cut file as zeros, so a vault cut inside
/// its last page would open and hand out an item it cannot decrypt; this check runs before
/// SQLite opens the file, and so before anything is created beside it.
extension Vault {
    /// Refuses a file whose length does not match its pages.
    ///
    /// Without a WAL that holds a commit, the file must be whole pages, and exactly the page
    /// count of its SQLite header (bytes 28-31) when that count is current (its "version-valid-
    /// for" number at 92 equals the change counter at 24). With such a WAL beside it, SQLite
    /// reads each page from the WAL when it holds one: the file must then hold every page up to
    /// the WAL's last commit that the WAL does not. So a vault whose checkpoint a kill
    /// interrupted (page 1 copied back first, naming pages only the WAL holds yet, or the file
    /// grown ahead of the pages) still opens.
    /// - Throws: `VaultFileError.notAVault` for a file that is not SQLite or is cut short or
    ///   long, `.io` when it cannot be read.
    static func checkNotTruncated(_ path: String) throws {
        guard let fd = try? FileDescriptor.open(path, .readOnly) else { throw VaultFileError.io }
        defer { try? fd.close() }
        var header = [UInt8](repeating: 0, count: 100)
        let n = header.withUnsafeMutableBytes { (try? fd.read(fromAbsoluteOffset: 0, into: $0)) ?? -1 }
        guard let st = try? fd.status() else { throw VaultFileError.io }
        guard n == 100, header.starts(with: Array("SQLite format 3".utf8) + [0]) else { throw VaultFileError.notAVault }
        let be32 = { (o: Int) in header[o..<o + 4].reduce(0) { $0 << 8 | Int($1) } }
        let rawPageSize = Int(header[16]) << 8 | Int(header[17])
        let pageSize = rawPageSize == 1 ? 65536 : rawPageSize
        guard WriteAheadLog.isPageSize(pageSize) else { throw VaultFileError.notAVault }
        let size = Int(st.size)
        switch WriteAheadLog.committedPages(path + "-wal", pageSize: pageSize) {
        case .unknown:
            return
        case .committed(let pages, let held):
            let whole = size / pageSize
            // Counted first, so a commit naming a huge size costs no walk over its pages.
            if pages > whole, pages - whole > held.count || ((whole + 1)...pages).contains(where: { !held.contains($0) }) {
                throw VaultFileError.notAVault
            }
        case .none:
            guard size % pageSize == 0 else { throw VaultFileError.notAVault }
            let pages = be32(28)
            // The count is current when the "version-valid-for" number equals the change counter.
            if pages > 0, be32(92) == be32(24), size != pageSize * pages { throw VaultFileError.notAVault }
        }
    }
}

/// What a vault's WAL file (`VAULT-wal`) holds, read as SQLite's recovery reads it
/// (sqlite.org/fileformat2.html, "The Write-Ahead Log"): a 32-byte header, then frames of a
/// 24-byte header and a page each, valid while their salts are the header's and their running
/// checksum holds; the last valid frame with a database size (a commit) ends the log.
enum WriteAheadLog {
    enum Contents: Equatable {
        /// No WAL, or none SQLite would read (empty, a bad header, no committed frame).
        case none
        /// The database size of the last commit, and the pages its frames hold.
        case committed(pages: Int, held: Set<Int>)
        /// A WAL that cannot be read or whose page size is not the database's: SQLite decides.
        case unknown
    }

    static let headerLength = 32
    static let frameHeaderLength = 24

    static func isPageSize(_ n: Int) -> Bool { n >= 512 && n <= 65536 && n & (n - 1) == 0 }

    /// Reads the WAL at `path`, one frame at a time.
    static func committedPages(_ path: String, pageSize: Int) -> Contents {
        guard FileSystem.exists(path) else { return .none }
        guard let fd = try? FileDescriptor.open(path, .readOnly) else { return .unknown }
        defer { try? fd.close() }
        var header = [UInt8](repeating: 0, count: headerLength)
        let n = header.withUnsafeMutableBytes { (try? fd.read(fromAbsoluteOffset: 0, into: $0)) ?? -1 }
        guard n >= 0 else { return .unknown }
        guard n == headerLength else { return .none }
        let be32 = { (b: [UInt8], o: Int) in UInt32(b[o]) << 24 | UInt32(b[o + 1]) << 16 | UInt32(b[o + 2]) << 8 | UInt32(b[o + 3]) }
        let magic = be32(header, 0)
        guard magic & ~1 == 0x377f_0682, be32(header, 4) == 3_007_000 else { return .none }
        let walPageSize = Int(be32(header, 8))
        guard isPageSize(walPageSize) else { return .none }
        let bigEndian = magic & 1 == 1
        var sum: (UInt32, UInt32) = (0, 0)
        header.withUnsafeBytes { checksum(UnsafeRawBufferPointer(rebasing: $0[0..<24]), bigEndian: bigEndian, &sum) }
        guard sum == (be32(header, 24), be32(header, 28)) else { return .none }
        guard walPageSize == pageSize else { return .unknown }

        var frame = [UInt8](repeating: 0, count: frameHeaderLength + pageSize)
        var offset = Int64(headerLength)
        // Each page's first frame, and the last commit: its frame's number and database size.
        var firstFrame: [Int: Int] = [:]
        var commit: (frame: Int, pages: Int)?
        var number = 0
        while true {
            let got = frame.withUnsafeMutableBytes { (try? fd.read(fromAbsoluteOffset: offset, into: $0)) ?? -1 }
            guard got >= 0 else { return .unknown }
            guard got == frame.count, frame[8..<16].elementsEqual(header[16..<24]) else { break }
            let page = Int(be32(frame, 0))
            guard page > 0 else { break }
            frame.withUnsafeBytes { f in
                checksum(UnsafeRawBufferPointer(rebasing: f[0..<8]), bigEndian: bigEndian, &sum)
                checksum(UnsafeRawBufferPointer(rebasing: f[frameHeaderLength...]), bigEndian: bigEndian, &sum)
            }
            guard sum == (be32(frame, 16), be32(frame, 20)) else { break }
            number += 1
            if firstFrame[page] == nil { firstFrame[page] = number }
            let databasePages = Int(be32(frame, 4))
            if databasePages > 0 { commit = (number, databasePages) }
            offset += Int64(frame.count)
        }
        guard let commit else { return .none }
        return .committed(pages: commit.pages, held: Set(firstFrame.compactMap { $0.value <= commit.frame ? $0.key : nil }))
    }

    /// SQLite's WAL checksum (walChecksumBytes): 32-bit words in the byte order the magic
    /// names, two sums that run on from `sum`.
    static func checksum(_ bytes: UnsafeRawBufferPointer, bigEndian: Bool, _ sum: inout (UInt32, UInt32)) {
        func word(_ i: Int) -> UInt32 {
            let b = (UInt32(bytes[i]), UInt32(bytes[i + 1]), UInt32(bytes[i + 2]), UInt32(bytes[i + 3]))
            return bigEndian ? b.0 << 24 | b.1 << 16 | b.2 << 8 | b.3 : b.3 << 24 | b.2 << 16 | b.1 << 8 | b.0
        }
        var (s0, s1) = sum
        for i in stride(from: 0, to: bytes.count - 7, by: 8) {
            s0 = s0 &+ word(i) &+ s1
            s1 = s1 &+ word(i + 4) &+ s0
        }
        sum = (s0, s1)
    }
}
