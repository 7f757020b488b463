import KeychainCore

/// A listing's names, packed: their bytes in one buffer and a small row per name, so that a
/// listing of 100,000 names holds a few megabytes rather than three allocations per name.
/// An item named by its account alone (the common case) keeps only the account's bytes; its
/// node is made again when the name is read. Other nodes are kept whole, apart.
struct ListedNames {
    private struct Row {
        /// Where the file name starts in `bytes`; the account follows it.
        var start: UInt32
        var nameLength: UInt32
        /// `Row.kept`: the node is in `kept` (or there is none).
        var accountLength: UInt32
        /// Into `groups`; `Row.noFile` for a directory.
        var group: UInt32
        var size: Int
        var mtime: Int
        var ctime: Int
        var writable: Bool

        static let kept = UInt32.max
        static let noFile = UInt32.max
    }

    /// The directory whose items' nodes are made from their accounts; nil keeps every node.
    private let directory: Directory?
    private var bytes: [UInt8] = []
    private var rows: [Row] = []
    private var groups: [String] = []
    private var groupIndex: [String: UInt32] = [:]
    private var kept: [Int: Node] = [:]
    /// While the names are added: row numbers by the name's hash (open addressing), to tell a
    /// name already listed. Dropped by `finished`.
    private var byName: [Int32] = []

    init(directory: Directory?) { self.directory = directory }

    init(_ names: [Listed]) {
        self.init(directory: nil)
        for n in names { _ = append(n) }
        finish()
    }

    var count: Int { rows.count }

    /// The bytes the names' buffers take, room to grow included, and the bytes they use.
    var bufferBytes: (taken: Int, used: Int) {
        (bytes.capacity + rows.capacity * MemoryLayout<Row>.stride, bytes.count + rows.count * MemoryLayout<Row>.stride)
    }

    /// Adds `listed` unless its file name is listed already; true when added.
    mutating func append(_ listed: Listed) -> Bool {
        if contains(listed.name) { return false }
        let start = bytes.count
        bytes += listed.name
        var accountLength = Row.kept
        if case .item(let n)? = listed.node, let directory, Self.plainName(account: n.account, in: directory) == n {
            bytes += n.account
            accountLength = UInt32(n.account.count)
        } else if let node = listed.node {
            kept[rows.count] = node
        }
        var row = Row(start: UInt32(start), nameLength: UInt32(listed.name.count), accountLength: accountLength,
                      group: Row.noFile, size: 0, mtime: 0, ctime: 0, writable: false)
        if let f = listed.file {
            row.group = groupIndex[f.group] ?? {
                groups.append(f.group)
                groupIndex[f.group] = UInt32(groups.count - 1)
                return UInt32(groups.count - 1)
            }()
            row.size = f.size
            row.mtime = f.mtime
            row.ctime = f.ctime
            row.writable = f.writable
        }
        rows.append(row)
        index(rows.count - 1)
        return true
    }

    /// Done adding: the name index goes, and the buffers shrink to what they hold.
    mutating func finish() {
        byName = []
        bytes = bytes.fitted()
        rows = rows.fitted()
    }

    subscript(i: Int) -> Listed {
        let row = rows[i]
        let name = Array(bytes[Int(row.start)..<Int(row.start + row.nameLength)])
        let file = row.group == Row.noFile ? nil
            : FileFacts(group: groups[Int(row.group)], size: row.size, mtime: row.mtime, ctime: row.ctime, writable: row.writable)
        return Listed(name: name, node: node(row, at: i), dotIno: 0, file: file)
    }

    /// The node of name `i`, without its file name.
    func node(at i: Int) -> Node? { node(rows[i], at: i) }

    private func node(_ row: Row, at i: Int) -> Node? {
        guard row.accountLength != Row.kept, let directory else { return kept[i] }
        let from = Int(row.start + row.nameLength)
        return .item(Self.plainName(account: Array(bytes[from..<from + Int(row.accountLength)]), in: directory))
    }

    /// The name of the item with `account` in `directory` that carries nothing else (no
    /// qualifier, no group).
    private static func plainName(account: [UInt8], in directory: Directory) -> ItemName {
        switch directory.itemClass {
        case .genericPassword: return ItemName(service: directory.service, account: account)
        case .internetPassword: return ItemName(server: directory.service, account: account)
        case .key, .certificate: return ItemName(flat: directory.itemClass, label: account)
        }
    }

    // MARK: The name index

    private func name(of row: Int) -> ArraySlice<UInt8> {
        let r = rows[row]
        return bytes[Int(r.start)..<Int(r.start + r.nameLength)]
    }

    private static func hash(_ name: UnsafeRawBufferPointer) -> Int {
        var h = Hasher()
        h.combine(bytes: name)
        return h.finalize()
    }

    private func contains(_ name: [UInt8]) -> Bool { row(named: name) != nil }

    /// The access group of the file listed as `name`, while names are added; nil when none is.
    func group(ofListed name: [UInt8]) -> String? {
        guard let i = row(named: name), rows[i].group != Row.noFile else { return nil }
        return groups[Int(rows[i].group)]
    }

    private func row(named name: [UInt8]) -> Int? {
        guard !byName.isEmpty else { return nil }
        let mask = byName.count - 1
        var p = name.withUnsafeBytes(Self.hash) & mask
        while byName[p] >= 0 {
            if self.name(of: Int(byName[p])).elementsEqual(name) { return Int(byName[p]) }
            p = (p + 1) & mask
        }
        return nil
    }

    private mutating func index(_ row: Int) {
        if rows.count * 2 > byName.count {
            byName = [Int32](repeating: -1, count: max(64, byName.count * 2))
            for r in 0..<rows.count { place(r) }
        } else {
            place(row)
        }
    }

    private mutating func place(_ row: Int) {
        let mask = byName.count - 1
        var p = name(of: row).withUnsafeBytes(Self.hash) & mask
        while byName[p] >= 0 { p = (p + 1) & mask }
        byName[p] = Int32(row)
    }
}
