import KeychainCrypto

/// Reversible file names for attribute values (docs/filesystem.md).
///
/// A value becomes its bytes with `%`, `/` and NUL written as `%XX` (upper-case hex). A name
/// that would be `.` or `..` has its first `.` written as `%2E`; so does every service name that
/// starts with `.`, because dot-names at the top are reserved for the other classes'
/// directories. The empty value is `%`. A name longer than 255 bytes becomes `%H` and 32 hex
/// digits of a BLAKE2b hash of the value, resolved by lookup.
public enum FileNames {
    public static let maximumLength = 255

    /// - Parameter topLevel: true for service names, whose leading `.` is always escaped.
    public static func escape(_ value: [UInt8], topLevel: Bool = false) -> [UInt8] {
        if value.isEmpty { return [UInt8(ascii: "%")] }
        let dot = UInt8(ascii: ".")
        let out = escapeBytes(value, escapeFirstDot: topLevel || value == [dot] || value == [dot, dot])
        if out.count > maximumLength {
            return Array("%H".utf8) + hexByte(KeyedHash.hash(value, key: nil, length: 16))
        }
        return out
    }

    /// The value a name stands for; nil for a hashed long name (resolve it by comparing
    /// `escape` of candidates) or a malformed escape.
    public static func unescape(_ name: [UInt8], topLevel: Bool = false) -> [UInt8]? {
        if name == [UInt8(ascii: "%")] { return [] }
        if name.starts(with: Array("%H".utf8)) { return nil }
        guard let out = unescapeBytes(name) else { return nil }
        return escape(out, topLevel: topLevel) == name ? out : nil  // only canonical spellings are accepted
    }

    // MARK: Classes and items

    /// An internet password's primary-key attributes besides `srvr` and `acct`, in the order
    /// its file name spells the ones that are set.
    public static let qualifierKeys: [AttributeKey] = [.protocol, .port, .path, .securityDomain, .authenticationType]

    /// The top-level directory of a class's items other than generic passwords' (`.internet`,
    /// `.keys`, `.certificates`).
    public static func classDirectory(_ c: ItemClass) -> [UInt8]? {
        switch c {
        case .genericPassword: return nil
        case .internetPassword: return Array(".internet".utf8)
        case .key: return Array(".keys".utf8)
        case .certificate: return Array(".certificates".utf8)
        }
    }

    /// Classes whose items sit directly in their class directory, one PEM file each, named by
    /// label: private keys and certificates.
    public static func isFlat(_ c: ItemClass) -> Bool { c == .key || c == .certificate }

    /// What names a key or certificate that has no label: the key's application label (`klbl`,
    /// SHA-1 of its public key), the certificate's serial number (`slnr`).
    public static func flatQualifier(_ c: ItemClass) -> AttributeKey { c == .key ? .applicationLabel : .serialNumber }

    static let pemSuffix = Array(".pem".utf8)

    /// A key's or certificate's file name: the escaped label and `.pem`; without a label,
    /// `%%~klbl=HEX.pem` (`%%~slnr=HEX.pem` for a certificate), HEX the attribute's bytes in
    /// upper-case hex; for a labelled one that shares its label with one listed before it, the
    /// label and then the same `%~klbl=HEX` (`%~slnr=HEX`). Longer than 255 bytes: `%H` and the
    /// hash of the name it would have been.
    static func flatFileName(of name: ItemName) -> [UInt8] {
        var out: [UInt8]
        let key = flatQualifier(name.itemClass)
        if name.account.isEmpty {
            out = [UInt8(ascii: "%")]
        } else {
            out = escapeBytes(name.account, escapeFirstDot: name.account == Array(".".utf8) || name.account == Array("..".utf8))
        }
        if name.account.isEmpty || name.qualifiers[key] != nil {
            out += Array("%~\(key)=".utf8) + hexByte(name.qualifiers[key]?.byteView ?? [])
        }
        out += pemSuffix
        if out.count > maximumLength {
            return Array("%H".utf8) + hexByte(KeyedHash.hash(out, key: nil, length: 16))
        }
        return out
    }

    /// The key or certificate a file name in its class directory stands for; nil for a hashed
    /// long name (resolved by lookup) or a name not in canonical form.
    static func flatItemName(_ file: [UInt8], itemClass c: ItemClass) -> ItemName? {
        guard file.count > pemSuffix.count, Array(file.suffix(pemSuffix.count)) == pemSuffix else { return nil }
        let base = Array(file.dropLast(pemSuffix.count))
        let marker = Array("%~\(flatQualifier(c))=".utf8)
        var parts = split(base, on: Array("%~".utf8))
        var qualifier: [UInt8]?
        if parts.count == 2 {
            guard parts[1].starts(with: marker.dropFirst(2)), let bytes = unhex(Array(parts[1].dropFirst(marker.count - 2))),
                  !bytes.isEmpty else { return nil }
            qualifier = bytes
            parts.removeLast()
        }
        guard parts.count == 1, let label = parts[0] == [UInt8(ascii: "%")] && qualifier != nil ? [] : unescapeBytes(parts[0]),
              !label.isEmpty || qualifier != nil else { return nil }
        var name = ItemName(flat: c, label: label, qualifiers: qualifier.map { [flatQualifier(c): .data($0)] } ?? [:])
        if !label.isEmpty, let qualifier { name.qualifiers = [flatQualifier(c): .data(qualifier)] }
        return flatFileName(of: name) == file ? name : nil  // only canonical spellings are accepted
    }

    private static func unhex(_ digits: [UInt8]) -> [UInt8]? {
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < digits.count {
            guard let hi = hexValue(digits[i]), let lo = hexValue(digits[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    /// Whether a qualifier's value is the one a missing attribute counts as (empty or zero).
    public static func isDefault(_ v: AttributeValue) -> Bool {
        if let n = v.integerView { return n == 0 }
        return v.byteView?.isEmpty ?? false
    }

    /// The name of a directory of `c`'s items: a service (its leading `.` escaped) or a server.
    public static func directoryName(_ value: [UInt8], itemClass c: ItemClass) -> [UInt8] {
        escape(value, topLevel: c == .genericPassword)
    }

    /// The suffix that names an item's access group: `%~agrp=` and the escaped group.
    public static let groupMarker = Array("%~agrp=".utf8)
    /// The suffix that names an item's synchronizable value: `%~sync=0` or `%~sync=1`.
    public static let synchronizableMarker = Array("%~sync=".utf8)

    /// An item's file name: the escaped account, and for an internet password each qualifier
    /// that is set as `%~key=value` (value escaped as a name is; numbers in decimal), in the order
    /// of `qualifierKeys`; then, for a name that carries its group (an item that shares its name
    /// with one in another group), `%~agrp=` and the group; then, for one that carries its
    /// synchronizable value (an item that shares its name with one of the other value in the
    /// same group), `%~sync=` and 0 or 1. `%~` never occurs in an escaped value, so the name
    /// splits back. Longer than 255 bytes: `%H` and the hash of the name it would have been.
    public static func fileName(of name: ItemName) -> [UInt8] {
        if isFlat(name.itemClass) { return flatFileName(of: name) }
        guard name.group != nil || name.synchronizable != nil || (name.itemClass == .internetPassword && !name.qualifiers.isEmpty)
        else { return escape(name.account) }
        var out = escapeBytes(name.account, escapeFirstDot: name.account == Array(".".utf8) || name.account == Array("..".utf8))
        if name.account.isEmpty { out = [UInt8(ascii: "%")] }
        for key in qualifierKeys {
            guard let v = name.qualifiers[key] else { continue }
            let text = v.integerView.map { Array(String($0).utf8) } ?? v.byteView ?? []
            out += Array("%~\(key)=".utf8) + escapeBytes(text, escapeFirstDot: false)
        }
        if let group = name.group { out += groupMarker + escapeBytes(Array(group.utf8), escapeFirstDot: false) }
        if let synchronizable = name.synchronizable { out += synchronizableMarker + [UInt8(ascii: synchronizable ? "1" : "0")] }
        if out.count > maximumLength {
            return Array("%H".utf8) + hexByte(KeyedHash.hash(out, key: nil, length: 16))
        }
        return out
    }

    /// The item a file name in directory `service` stands for; nil for a hashed long name
    /// (resolved by lookup) or a name not in canonical form.
    public static func itemName(_ file: [UInt8], service: [UInt8], itemClass c: ItemClass) -> ItemName? {
        if isFlat(c) { return flatItemName(file, itemClass: c) }
        // Most names escape nothing: the account as it is, spelled canonically (no group, no
        // qualifier). The mount parses one for every lookup.
        if isPlain(file) {
            return c == .internetPassword ? ItemName(server: service, account: file) : ItemName(service: service, account: file)
        }
        var parts = split(file, on: Array("%~".utf8))
        var synchronizable: Bool?
        if parts.count > 1, let last = parts.last, last.starts(with: Array("sync=".utf8)) {
            switch Array(last.dropFirst(5)) {
            case [UInt8(ascii: "0")]: synchronizable = false
            case [UInt8(ascii: "1")]: synchronizable = true
            default: return nil
            }
            parts.removeLast()
        }
        var group: String?
        if parts.count > 1, let last = parts.last, last.starts(with: Array("agrp=".utf8)) {
            guard let bytes = unescapeBytes(Array(last.dropFirst(5))), !bytes.isEmpty,
                  let text = String(validating: bytes, as: UTF8.self) else { return nil }
            group = text
            parts.removeLast()
        }
        guard let account = unescape(parts.removeFirst()) else { return nil }
        var qualifiers: Attributes = [:]
        for part in parts {
            guard c == .internetPassword, let eq = part.firstIndex(of: UInt8(ascii: "=")) else { return nil }
            let key = AttributeKey(rawValue: String(decoding: part[..<eq], as: UTF8.self))
            guard qualifierKeys.contains(key), qualifiers[key] == nil,
                  let bytes = unescapeBytes(Array(part[(eq + 1)...])) else { return nil }
            let number = AttributeKind.of(key) == .number ? Int64(String(decoding: bytes, as: UTF8.self)) : nil
            qualifiers[key] = number.map(AttributeValue.number) ?? .data(bytes)
        }
        var name = c == .internetPassword ? ItemName(server: service, account: account, qualifiers: qualifiers)
                                          : ItemName(service: service, account: account)
        name.group = group
        name.synchronizable = synchronizable
        return fileName(of: name) == file ? name : nil  // only canonical spellings are accepted
    }

    /// Whether `escape` leaves `file` as it is: no byte it escapes, not `.` or `..`, not empty
    /// and short enough to be no hashed name.
    static func isPlain(_ file: [UInt8]) -> Bool {
        let dot = UInt8(ascii: ".")
        guard !file.isEmpty, file.count <= maximumLength, file != [dot], file != [dot, dot] else { return false }
        return !file.contains { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "/") || $0 == 0 }
    }

    private static func escapeBytes(_ value: [UInt8], escapeFirstDot: Bool) -> [UInt8] {
        var out: [UInt8] = []
        for (i, b) in value.enumerated() {
            if b == UInt8(ascii: "%") || b == UInt8(ascii: "/") || b == 0 || (i == 0 && b == UInt8(ascii: ".") && escapeFirstDot) {
                out += [UInt8(ascii: "%")] + hexByte(b)
            } else {
                out.append(b)
            }
        }
        return out
    }

    private static func unescapeBytes(_ name: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        var i = 0
        while i < name.count {
            if name[i] == UInt8(ascii: "%") {
                guard i + 2 < name.count, let hi = hexValue(name[i + 1]), let lo = hexValue(name[i + 2]) else { return nil }
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(name[i])
                i += 1
            }
        }
        return out
    }

    private static func split(_ bytes: [UInt8], on separator: [UInt8]) -> [[UInt8]] {
        var parts: [[UInt8]] = []
        var start = 0, i = 0
        while i + separator.count <= bytes.count {
            if Array(bytes[i..<(i + separator.count)]) == separator {
                parts.append(Array(bytes[start..<i]))
                i += separator.count
                start = i
            } else {
                i += 1
            }
        }
        parts.append(Array(bytes[start...]))
        return parts
    }

    static func hexByte(_ b: UInt8) -> [UInt8] { hexByte([b]) }

    static func hexByte(_ bytes: [UInt8]) -> [UInt8] {
        let digits = Array("0123456789ABCDEF".utf8)
        return bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
