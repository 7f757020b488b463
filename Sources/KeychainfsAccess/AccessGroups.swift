import KeychainModel

/// An access group's Unix settings: who is entitled to it, and later the ownership and mode of
/// its files in the mount.
public struct AccessGroup: Sendable, Equatable {
    public var name: String
    public var owner: UInt32
    public var gid: UInt32
    public var mode: UInt32
    /// When non-empty, only callers running one of these executables are entitled.
    public var executables: [String]
    /// Whether callers entitled to this group may lock the vault. Off by default: a lock stops
    /// every consumer of every group at once, so it is the owner's and root's unless granted.
    public var grantsLock: Bool
    /// Whether callers entitled to this group may read the audit log (`--may-audit`). Off by
    /// default: the log shows every caller's uid, pid and executable.
    public var grantsAudit: Bool = false

    public init(name: String, owner: UInt32, gid: UInt32, mode: UInt32 = 0o400, executables: [String] = [],
                grantsLock: Bool = false) {
        self.name = name
        self.owner = owner
        self.gid = gid
        self.mode = mode
        self.executables = executables
        self.grantsLock = grantsLock
    }

    /// Entitled when the executable is allowed (if restricted) and the caller is root, the
    /// owner, a member of the group while the mode lets the group read, or anyone while the
    /// mode lets others read. The same rule the kernel applies to the group's files.
    public func entitles(_ caller: CallerIdentity) -> Bool {
        if !executables.isEmpty {
            guard let exe = caller.executable, executables.contains(exe) else { return false }
        }
        if caller.uid == 0 || caller.uid == owner { return true }
        if mode & 0o040 != 0 && caller.groups.contains(gid) { return true }
        return mode & 0o004 != 0
    }

    /// May the caller add, change or delete the group's items? As `entitles`, with the write
    /// bits: the owner always, group members with 0020, others with 0002.
    public func entitlesWriting(_ caller: CallerIdentity) -> Bool {
        guard entitles(caller) else { return false }
        if caller.uid == 0 || caller.uid == owner { return true }
        if mode & 0o020 != 0 && caller.groups.contains(gid) { return true }
        return mode & 0o002 != 0
    }

    public var record: Fields {
        var r: Fields = ["name": .string(name), "owner": .number(Int64(owner)), "gid": .number(Int64(gid)),
                             "mode": .number(Int64(mode)), "exe": .string(executables.joined(separator: "\n")),
                             "lock": .number(grantsLock ? 1 : 0)]
        if grantsAudit { r["audit"] = .number(1) }  // only when granted: older readers see the same records
        return r
    }

    public init?(record: Fields) {
        guard case .string(let name)? = record["name"], let owner = record["owner"]?.integerValue,
              let gid = record["gid"]?.integerValue, let mode = record["mode"]?.integerValue
        else { return nil }
        let exe = record["exe"]?.stringValue ?? ""
        self.init(name: name, owner: UInt32(truncatingIfNeeded: owner), gid: UInt32(truncatingIfNeeded: gid),
                  mode: UInt32(truncatingIfNeeded: mode),
                  executables: exe.isEmpty ? [] : exe.split(separator: "\n").map(String.init),
                  grantsLock: record["lock"]?.integerValue == 1)  // absent in tables written before the grant
        grantsAudit = record["audit"]?.integerValue == 1
    }
}

extension AttributeValue {
    public var integerValue: Int64? { if case .number(let n) = self { return n }; return nil }
}

/// The vault's access groups, in creation order. The daemon keeps them as a sealed setting in
/// the vault (`settingName`, the bytes of `encoded()`); this module only decides with them.
public struct AccessGroupTable: Sendable {
    public var groups: [AccessGroup]

    public static let settingName = "access-groups"

    public init(groups: [AccessGroup]) { self.groups = groups }

    /// The table from the bytes of `encoded()`. - Throws: `KeychainStatus.decode` for bytes
    /// that are cut short or hold a record that is not a group.
    public init(encoded bytes: UnsafeRawBufferPointer) throws {
        var r = ByteReader(bytes)
        do {
            let count = Int(try r.u16())
            var groups: [AccessGroup] = []
            for _ in 0..<count {
                guard let g = AccessGroup(record: try AttributeCoding.readFields(from: &r)) else { throw KeychainStatus.decode }
                groups.append(g)
            }
            self.init(groups: groups)
        } catch is ByteReader.Truncated {
            throw KeychainStatus.decode
        }
    }

    /// The table as stored: a 16-bit count, then each group's record.
    /// - Throws: `KeychainStatus.param` for a table that cannot be written (over 65,535
    ///   groups), rather than cut it.
    public func encoded() throws -> [UInt8] {
        guard let count = UInt16(exactly: groups.count) else { throw KeychainStatus.param }
        var w = ByteWriter()
        w.u16(count)
        for g in groups { AttributeCoding.write(g.record, into: &w) }
        return w.bytes
    }

    /// The caller's entitled groups in creation order; the first is its default for adds.
    public func entitled(_ caller: CallerIdentity) -> [String] {
        groups.filter { $0.entitles(caller) }.map(\.name)
    }

    /// The groups whose items the caller may change, in creation order.
    public func writable(_ caller: CallerIdentity) -> [String] {
        groups.filter { $0.entitlesWriting(caller) }.map(\.name)
    }

    public func group(named name: String) -> AccessGroup? { groups.first { $0.name == name } }

    /// Whether a group the caller is entitled to grants locking the vault (`group set --may-lock`).
    public func grantsLock(to caller: CallerIdentity) -> Bool {
        groups.contains { $0.grantsLock && $0.entitles(caller) }
    }

    /// Whether a group the caller is entitled to grants reading the audit log (`--may-audit`).
    public func grantsAudit(to caller: CallerIdentity) -> Bool {
        groups.contains { $0.grantsAudit && $0.entitles(caller) }
    }
}
