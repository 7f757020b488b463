import KeychainCrypto

/// The backup file (docs/backup-format.md): a clear header, then the item stream sealed in
/// chunks under a key derived from the backup passphrase with Argon2id.
///
/// ```
/// header  magic(8) u16 version u16 body-length body BLAKE2b-256(everything before)
/// chunks  u32 box-length box ...   box = seal(key, plaintext, AD(header, index, final))
/// ```
/// The last chunk is sealed as final, so a file cut short or extended fails to open.
public enum BackupFormat {
    /// The format this build writes and the newest it reads. Version 2 adds the access groups'
    /// definitions after the items; a version 1 backup (no group records) still reads.
    public static let currentVersion: UInt16 = 2
    public static let magic: [UInt8] = Array("KCFSBKUP".utf8)
    /// Plaintext bytes per chunk unless told otherwise.
    public static let defaultChunkSize = 1 << 20
    /// The largest chunk a reader accepts, so a hostile header cannot demand a huge buffer.
    public static let maximumChunkSize = 16 << 20

    package static let prefixLength = 12          // magic, version, body length
    package static let bodyLength = 77            // version 1
    package static let checksumLength = 32
    package static let headerLength = prefixLength + bodyLength + checksumLength   // 121
    /// The body up to the key check: the key check's associated data covers it.
    package static let checkedLength = prefixLength + bodyLength - AEAD.overhead   // 49
    package static let argon2id: UInt8 = 1

    package static let checkLabel = Array("keychainfs backup check v1".utf8)
    package static let chunkLabel = Array("keychainfs backup chunk v1".utf8)

    /// Record kinds in the plaintext stream.
    package static let itemRecord: UInt8 = 1
    package static let endRecord: UInt8 = 0
    /// An access group's definition (version 2 on), after every item record.
    package static let groupRecord: UInt8 = 2

    /// The format version of a backup file, after checking its magic and checksum.
    /// - Throws: `KeychainStatus.decode` for a file that is not a backup or is damaged;
    ///   `BackupFileError.newerFormat` for a backup written by a newer keychainfs.
    public static func version(of bytes: [UInt8]) throws -> Int {
        Int(try BackupHeader.parse(bytes).version)
    }

    /// The clear header of a new backup, with its key check sealed under `key`.
    package static func makeHeader(kdf: KDFParameters, salt: [UInt8], chunkSize: Int, key: SecureBytes) -> [UInt8] {
        var w = ByteWriter(capacity: headerLength)
        w.raw(magic)
        w.u16(currentVersion)
        w.u16(UInt16(bodyLength))
        w.u8(argon2id)
        w.u64(kdf.opsLimit)
        w.u64(kdf.memLimit)
        w.raw(salt)
        w.u32(UInt32(chunkSize))
        w.raw(AEAD.seal(UnsafeRawBufferPointer(start: nil, count: 0), key: key, associatedData: checkLabel + w.bytes))
        w.raw(KeyedHash.hash(w.bytes, key: nil, length: checksumLength))
        return w.bytes
    }

    package static func chunkAD(header: [UInt8], index: UInt64, final: Bool) -> [UInt8] {
        var w = ByteWriter(capacity: chunkLabel.count + header.count + 9)
        w.raw(chunkLabel)
        w.raw(header)
        w.u64(index)
        w.u8(final ? 1 : 0)
        return w.bytes
    }
}

/// Why a backup file cannot be read, beyond damage (which is `KeychainStatus.decode`).
public enum BackupFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Written by a newer keychainfs; this build reads backup formats up to `supported`.
    case newerFormat(found: Int, supported: Int)

    public var status: KeychainStatus { .invalidKeychain }

    public var description: String {
        switch self {
        case .newerFormat(let found, let supported):
            return "The backup uses format version \(found); this keychainfs reads backup versions up to \(supported)."
        }
    }
}

/// The parsed clear header of a backup.
package struct BackupHeader {
    package var version: UInt16
    package var kdf: KDFParameters
    package var salt: [UInt8]
    package var chunkSize: Int
    package var keyCheck: [UInt8]
    /// The header's bytes as they are in the file; part of every chunk's associated data.
    package var bytes: [UInt8]

    /// Checks magic and checksum first, so a changed version byte reads as damage, then the version.
    /// - Throws: `KeychainStatus.decode`, `BackupFileError.newerFormat`.
    package static func parse(_ file: [UInt8]) throws -> BackupHeader {
        try file.withUnsafeBytes { buf in
            var r = ByteReader(buf)
            do {
                guard try r.raw(8) == BackupFormat.magic else { throw KeychainStatus.decode }
                let version = try r.u16()
                let bodyLength = Int(try r.u16())
                let covered = BackupFormat.prefixLength + bodyLength
                let body = try r.raw(bodyLength)
                guard try r.raw(BackupFormat.checksumLength)
                        == KeyedHash.hash(UnsafeRawBufferPointer(rebasing: buf[0..<covered]), key: nil,
                                          length: BackupFormat.checksumLength)
                else { throw KeychainStatus.decode }
                guard version >= 1 else { throw KeychainStatus.decode }
                guard version <= BackupFormat.currentVersion else {
                    throw BackupFileError.newerFormat(found: Int(version), supported: Int(BackupFormat.currentVersion))
                }
                guard bodyLength == BackupFormat.bodyLength else { throw KeychainStatus.decode }
                return try body.withUnsafeBytes { bodyBuf in
                    var b = ByteReader(bodyBuf)
                    guard try b.u8() == BackupFormat.argon2id else { throw KeychainStatus.decode }
                    let kdf = KDFParameters(opsLimit: try b.u64(), memLimit: try b.u64())
                    let salt = try b.raw(PasswordHash.saltLength)
                    let chunkSize = Int(try b.u32())
                    let check = try b.raw(AEAD.overhead)
                    guard kdf.isValid, (1...BackupFormat.maximumChunkSize).contains(chunkSize) else {
                        throw KeychainStatus.decode
                    }
                    return BackupHeader(version: version, kdf: kdf, salt: salt, chunkSize: chunkSize, keyCheck: check,
                                        bytes: Array(buf[0..<covered + BackupFormat.checksumLength]))
                }
            } catch is ByteReader.Truncated {
                throw KeychainStatus.decode
            }
        }
    }

    /// Derives the backup key and checks it against the key check.
    /// - Throws: `authFailed` for a wrong passphrase, `allocate` when Argon2id cannot run.
    package func key(passphrase: SecureBytes) throws -> SecureBytes {
        let key: SecureBytes
        do { key = try PasswordHash.deriveKey(passphrase: passphrase, salt: salt, parameters: kdf) }
        catch { throw KeychainStatus.allocate }
        let ad = BackupFormat.checkLabel + Array(bytes[0..<BackupFormat.checkedLength])
        guard (try nilUnlessOutOfMemory({ try AEAD.open(keyCheck, key: key, associatedData: ad) })) != nil else {
            key.wipe()
            throw KeychainStatus.authFailed
        }
        return key
    }
}

/// Builds the sealed chunk stream. Plaintext only ever sits in one guarded chunk buffer; a full
/// chunk is sealed when more bytes arrive, so the last one can be sealed as final.
package final class BackupWriter {
    private let key: SecureBytes
    private let header: [UInt8]
    private let chunk: SecureBytes
    private var filled = 0
    private var index: UInt64 = 0
    private(set) var output: [UInt8]

    package init(header: [UInt8], key: SecureBytes, chunkSize: Int) throws {
        self.header = header
        self.key = key
        chunk = try SecureBytes(count: chunkSize)
        output = header
    }

    deinit { chunk.wipe() }

    package func write(_ bytes: UnsafeRawBufferPointer) {
        var done = 0
        while done < bytes.count {
            if filled == chunk.count { seal(final: false) }
            let n = min(chunk.count - filled, bytes.count - done)
            chunk.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: filled).copyMemory(from: bytes.baseAddress! + done, byteCount: n) }
            filled += n
            done += n
        }
    }

    package func write(_ secure: SecureBytes) { secure.withUnsafeBytes { write($0) } }

    /// Non-secret framing (kinds, codes, lengths).
    package func write(_ plain: [UInt8]) { plain.withUnsafeBytes { write($0) } }

    /// Seals what is left as the final chunk and returns the whole file.
    package func finish() -> [UInt8] {
        seal(final: true)
        chunk.wipe()
        return output
    }

    private func seal(final: Bool) {
        let box = chunk.withUnsafeBytes { buf in
            AEAD.seal(UnsafeRawBufferPointer(rebasing: buf[0..<filled]), key: key,
                      associatedData: BackupFormat.chunkAD(header: header, index: index, final: final))
        }
        var w = ByteWriter()
        w.u32(UInt32(box.count))
        output += w.bytes
        output += box
        chunk.withUnsafeMutableBytes { buf in _ = buf.initializeMemory(as: UInt8.self, repeating: 0) }
        filled = 0
        index += 1
    }
}

/// Reads the plaintext stream back, opening one chunk at a time. Any chunk that fails to open,
/// is missing, is out of order or follows the final one gives `KeychainStatus.decode`.
package final class BackupReader {
    private let file: [UInt8]
    private let header: BackupHeader
    private let key: SecureBytes
    private var offset: Int
    private var index: UInt64 = 0
    private var chunk: SecureBytes?
    private var position = 0
    private var sawFinal = false

    package init(file: [UInt8], header: BackupHeader, key: SecureBytes) {
        self.file = file
        self.header = header
        self.key = key
        offset = header.bytes.count
    }

    deinit { chunk?.wipe() }

    /// True when the final chunk has been opened and read to its end.
    package var atEnd: Bool { sawFinal && position == (chunk?.count ?? 0) }

    /// Plaintext bytes that can still come: an upper bound, for checking lengths before allocating.
    private var remainingBound: Int { (chunk?.count ?? 0) - position + (file.count - offset) }

    /// Reads `count` bytes into guarded memory.
    package func read(_ count: Int) throws -> SecureBytes {
        guard count >= 0, count <= remainingBound else { throw KeychainStatus.decode }
        let out = try SecureBytes(count: count)
        try out.withUnsafeMutableBytes { try read(into: $0) }
        return out
    }

    package func u8() throws -> UInt8 { try fixed(1)[0] }
    package func u32() throws -> UInt32 { UInt32(try fixed(4).reduce(0) { $0 << 8 | UInt64($1) }) }
    package func u64() throws -> UInt64 { try fixed(8).reduce(0) { $0 << 8 | UInt64($1) } }

    /// Non-secret framing fields.
    private func fixed(_ count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        try out.withUnsafeMutableBytes { try read(into: $0) }
        return out
    }

    private func read(into dst: UnsafeMutableRawBufferPointer) throws {
        var done = 0
        while done < dst.count {
            if chunk == nil || position == chunk!.count { try nextChunk() }
            guard let c = chunk else { throw KeychainStatus.decode }
            let n = min(c.count - position, dst.count - done)
            c.withUnsafeBytes { dst.baseAddress!.advanced(by: done).copyMemory(from: $0.baseAddress! + position, byteCount: n) }
            position += n
            done += n
        }
    }

    private func nextChunk() throws {
        guard !sawFinal, file.count - offset >= 4 else { throw KeychainStatus.decode }
        let length = file[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        let start = offset + 4
        guard length >= AEAD.overhead, length <= header.chunkSize + AEAD.overhead, file.count - start >= length else {
            throw KeychainStatus.decode
        }
        let final = start + length == file.count
        // Every chunk but the last is full.
        guard final || length == header.chunkSize + AEAD.overhead else { throw KeychainStatus.decode }
        let opened: SecureBytes
        do {
            opened = try AEAD.open(Array(file[start..<start + length]), key: key,
                                   associatedData: BackupFormat.chunkAD(header: header.bytes, index: index, final: final))
        } catch { throw isAllocationFailure(error) ? KeychainStatus.allocate : KeychainStatus.decode }
        chunk?.wipe()
        chunk = opened
        position = 0
        offset = start + length
        index += 1
        sawFinal = final
    }
}
