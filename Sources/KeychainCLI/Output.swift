import KeychainModel
import KeychainCrypto

/// Renders items and info for people (the `security` layout) and for scripts (`--json`).
package enum Output {
    /// `2026-11-29T17:00:00Z` from Apple absolute time.
    static func isoDate(_ absolute: Double) -> String {
        ISOTime.string(absolute: absolute) ?? "invalid"
    }

    /// Printable UTF-8 without control characters, or nil.
    static func printable(_ bytes: [UInt8]) -> String? {
        guard let s = String(validating: bytes, as: UTF8.self),
              !s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) else { return nil }
        return s
    }

    /// One attribute as `security` prints it: `"acct"<blob>="app"`.
    static func text(_ key: String, _ value: AttributeValue) -> String {
        switch value {
        case .string(let s): return "\"\(key)\"<blob>=\"\(escape(s))\""
        case .data(let d): return "\"\(key)\"<blob>=" + (printable(d).map { "\"\(escape($0))\"" } ?? "0x" + Hex.encode(d))
        case .number(let n): return "\"\(key)\"<uint32>=\(n)"
        case .bool(let b): return "\"\(key)\"<uint32>=\(b ? 1 : 0)"
        case .date(let t): return "\"\(key)\"<timedate>=\"\(isoDate(t))\""
        }
    }

    static func escape(_ s: String) -> String {
        s.replacingAll("\\", "\\\\").replacingAll("\"", "\\\"")
    }

    /// The item block of `find-*-password` and `dump-keychain`.
    static func itemText(vault: String, attributes: Attributes) -> String {
        var out = "keychain: \"\(vault)\"\nclass: \"\(attributes[.class]?.stringValue ?? "?")\"\nattributes:\n"
        for key in attributes.keys.sorted() where key != .class {
            out += "    " + text(key.rawValue, attributes[key]!) + "\n"
        }
        return out
    }

    // MARK: JSON

    static func json(_ value: AttributeValue) -> String {
        switch value {
        case .string(let s): return jsonString(s)
        case .data(let d): return printable(d).map(jsonString) ?? "{\"hex\":\"\(Hex.encode(d))\"}"
        case .number(let n): return String(n)
        case .bool(let b): return b ? "true" : "false"
        case .date(let t): return jsonString(isoDate(t))
        }
    }

    static func json(_ attributes: Attributes) -> String { json(attributes.fields) }

    static func json(_ attributes: Fields) -> String {
        "{" + attributes.keys.sorted().map { jsonString($0) + ":" + json(attributes[$0]!) }.joined(separator: ",") + "}"
    }

    /// The daemon's info fields whose strings hold lists (docs/cli.md, "JSON"): arrays in JSON.
    static let listFields: [String: Character] = ["groups": ",", "mounts": "\n", "damaged": "\n", "exe": "\n"]

    /// `json` with the list fields as arrays of strings, and `mode` as an octal string ("0440").
    static func jsonShaped(_ attributes: Fields) -> String {
        "{" + attributes.keys.sorted().map { key -> String in
            let value = attributes[key]!
            if let separator = listFields[key], case .string(let s) = value {
                return jsonString(key) + ":[" + s.split(separator: separator).map { jsonString(String($0)) }.joined(separator: ",") + "]"
            }
            if key == "mode", case .number(let n) = value { return jsonString(key) + ":" + jsonString("0" + String(n, radix: 8)) }
            return jsonString(key) + ":" + json(value)
        }.joined(separator: ",") + "}"
    }

    package static func jsonString(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let h = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

extension String {
    func replacingAll(_ target: String, _ replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = self[...]
        while let r = rest.firstRange(of: target) {
            out += rest[..<r.lowerBound] + replacement
            rest = rest[r.upperBound...]
        }
        return out + rest
    }
}
