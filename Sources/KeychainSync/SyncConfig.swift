import KeychainCore
import KeychainCrypto

/// What a host remembers of its circle besides keys: sealed in the vault as the setting
/// `sealed.sync` (docs/sync.md, "Local state"). Holds no secret; the server's connection
/// string carries no password (refused on input).
struct SyncConfig: Equatable {
    enum State: UInt8 { case joining = 1, member = 2 }

    struct Member: Equatable {
        var hostID: [UInt8]
        var signKey: [UInt8]
        var boxKey: [UInt8]
        var name: String
    }

    /// A member removed by `sync remove`: its records before `until` (the log position where
    /// the epoch that excluded it began) are still read; nothing of it after.
    struct Former: Equatable {
        var member: Member
        var until: Int64
    }

    var state: State
    var conninfo: String
    var name: String
    var circleID: [UInt8] = []
    var epoch: UInt32 = 0
    /// The last log position applied here.
    var cursor: Int64 = 0
    var members: [Member] = []
    /// Where the current epoch began in the log: a record after it must be of this epoch.
    var epochStart: Int64 = 0
    var former: [Former] = []
    /// Milliseconds between this host's rounds when it does not LISTEN (`sync set --poll`),
    /// for a server reached through a pooler in transaction mode, which cannot carry LISTEN;
    /// 0: it listens, and rounds come on a notification or every 2 s.
    var pollMilliseconds: UInt32 = 0

    static let settingName = "sync"

    func member(_ host: [UInt8]) -> Member? { members.first { $0.hostID == host } }

    /// The member that may have written at log position `seq`: a current one, or a former one
    /// before its removal.
    func writer(_ host: [UInt8], at seq: Int64) -> Member? {
        member(host) ?? former.first { $0.member.hostID == host && seq < $0.until }?.member
    }

    static func encode(_ m: Member, into w: inout ByteWriter) {
        w.raw(m.hostID)
        w.raw(m.signKey)
        w.raw(m.boxKey)
        w.lengthPrefixed(Array(m.name.utf8))
    }

    static func readMember(_ r: inout ByteReader) throws -> Member {
        Member(hostID: try r.raw(16), signKey: try r.raw(32), boxKey: try r.raw(32),
               name: String(decoding: try r.lengthPrefixed(), as: UTF8.self))
    }

    /// `u16 count || (member || u64 until)*`, in the setting and in a grant.
    static func encode(_ former: [Former], into w: inout ByteWriter) {
        w.u16(UInt16(former.count))
        for f in former {
            encode(f.member, into: &w)
            w.u64(UInt64(bitPattern: f.until))
        }
    }

    static func readFormer(_ r: inout ByteReader) throws -> [Former] {
        var out: [Former] = []
        for _ in 0..<(try r.u16()) {
            out.append(Former(member: try readMember(&r), until: Int64(bitPattern: try r.u64())))
        }
        return out
    }

    func encoded() -> [UInt8] {
        var w = ByteWriter()
        // Version of this encoding: 2 adds the epoch's start and former members, 3 the polling;
        // 2 while the host listens, so a daemon from before polling still reads it.
        w.u8(pollMilliseconds > 0 ? 3 : 2)
        w.u8(state.rawValue)
        w.lengthPrefixed(Array(conninfo.utf8))
        w.lengthPrefixed(Array(name.utf8))
        w.lengthPrefixed(circleID)
        w.u32(epoch)
        w.u64(UInt64(bitPattern: cursor))
        w.u16(UInt16(members.count))
        for m in members {
            w.raw(m.hostID)
            w.raw(m.signKey)
            w.raw(m.boxKey)
            w.lengthPrefixed(Array(m.name.utf8))
        }
        w.u64(UInt64(bitPattern: epochStart))
        Self.encode(former, into: &w)
        if pollMilliseconds > 0 { w.u32(pollMilliseconds) }
        return w.bytes
    }

    static func decode(_ s: SecureBytes) throws -> SyncConfig {
        try s.withUnsafeBytes { raw in
            var r = ByteReader(raw)
            let version = try r.u8()
            guard (1...3).contains(version), let state = State(rawValue: try r.u8()) else { throw SyncError.malformed }
            var c = SyncConfig(state: state, conninfo: String(decoding: try r.lengthPrefixed(), as: UTF8.self),
                               name: String(decoding: try r.lengthPrefixed(), as: UTF8.self))
            c.circleID = try r.lengthPrefixed()
            c.epoch = try r.u32()
            c.cursor = Int64(bitPattern: try r.u64())
            for _ in 0..<(try r.u16()) {
                c.members.append(Member(hostID: try r.raw(16), signKey: try r.raw(32), boxKey: try r.raw(32),
                                        name: String(decoding: try r.lengthPrefixed(), as: UTF8.self)))
            }
            if version >= 2 {
                c.epochStart = Int64(bitPattern: try r.u64())
                c.former = try readFormer(&r)
            }
            if version >= 3 { c.pollMilliseconds = try r.u32() }
            return c
        }
    }

    static func load(_ vault: Vault) throws -> SyncConfig? {
        guard let s = try vault.sealedSetting(settingName) else { return nil }
        defer { s.wipe() }
        return try decode(s)
    }

    func save(_ vault: Vault) throws {
        var bytes = encoded()
        defer { wipeBytes(&bytes) }
        let s = try SecureBytes(copying: bytes)
        defer { s.wipe() }
        try vault.setSealedSetting(Self.settingName, s)
    }

    static func remove(_ vault: Vault) throws {
        // An empty value reads back as "not in a circle".
        try vault.setSealedSetting(settingName, try SecureBytes(count: 0))
    }
}
