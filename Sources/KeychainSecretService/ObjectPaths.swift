import KeychainCrypto

/// The object paths this service serves, as the specification names them.
///
/// `/org/freedesktop/secrets/collection/GROUP` is an access group, `.../GROUP/REF` one of its
/// items (REF: the item's persistent reference in hex), `/org/freedesktop/secrets/aliases/default`
/// the caller's first group, `.../session/N` and `.../prompt/N` sessions and prompts.
enum ObjectPath: Equatable {
    case service
    case collection(group: String)
    case item(group: String, ref: [UInt8])
    case session(Int)
    case prompt(Int)
    case defaultAlias

    static let root = "/org/freedesktop/secrets"
    static let collectionPrefix = root + "/collection/"
    /// "No object": the spec's answer for "no prompt needed" or "no such alias".
    static let none = "/"

    var string: String {
        switch self {
        case .service: return Self.root
        case .collection(let g): return Self.collectionPrefix + Self.element(g)
        case .item(let g, let ref): return Self.collectionPrefix + Self.element(g) + "/" + Hex.encode(ref)
        case .session(let n): return Self.root + "/session/s\(n)"
        case .prompt(let n): return Self.root + "/prompt/p\(n)"
        case .defaultAlias: return Self.root + "/aliases/default"
        }
    }

    /// Parses a path this service made; nil for anything else.
    init?(_ path: String) {
        if path == Self.root { self = .service; return }
        if path == Self.root + "/aliases/default" { self = .defaultAlias; return }
        if path.hasPrefix(Self.root + "/session/s"), let n = Int(path.dropFirst(Self.root.count + 10)) { self = .session(n); return }
        if path.hasPrefix(Self.root + "/prompt/p"), let n = Int(path.dropFirst(Self.root.count + 9)) { self = .prompt(n); return }
        guard path.hasPrefix(Self.collectionPrefix) else { return nil }
        let parts = path.dropFirst(Self.collectionPrefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard let group = Self.group(fromElement: parts[0]) else { return nil }
        if parts.count == 1 { self = .collection(group: group); return }
        guard parts.count == 2, let ref = Hex.decode(parts[1]), !ref.isEmpty else { return nil }
        self = .item(group: group, ref: ref)
    }

    /// A group name as one path element: letters and digits kept, every other byte `_XX` (hex),
    /// an empty name `_`. Object path elements allow only [A-Za-z0-9_].
    static func element(_ group: String) -> String {
        if group.isEmpty { return "_" }
        var out = ""
        for b in group.utf8 {
            let c = Character(Unicode.Scalar(b))
            if b < 0x80, c.isLetter || c.isNumber { out.append(c) } else { out += "_" + Hex.encode([b]) }
        }
        return out
    }

    static func group(fromElement e: Substring) -> String? {
        if e == "_" { return "" }
        guard !e.isEmpty else { return nil }  // the empty group is `_`; an empty element names nothing
        var bytes: [UInt8] = []
        var i = e.utf8.startIndex
        let u = e.utf8
        while i < u.endIndex {
            if u[i] == UInt8(ascii: "_") {
                let a = u.index(after: i)
                guard a < u.endIndex, u.index(after: a) < u.endIndex,
                      let v = Hex.decode(String(e[a..<u.index(a, offsetBy: 2)])) else { return nil }
                bytes += v
                i = u.index(a, offsetBy: 2)
            } else {
                bytes.append(u[i])
                i = u.index(after: i)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
