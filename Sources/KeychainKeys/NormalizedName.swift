/// Apple's normalized form of an X.501 Name, the value of a certificate item's `issr` and `subj`
/// attributes and the issuer a keychain search compares.
///
/// What Apple's Security does (`createNormalizedX501Name`, `SecCertificate.c`; facts, not its
/// code): the result is the Name's content, without the outer SEQUENCE tag and length; every
/// RelativeDistinguishedName SET and AttributeTypeAndValue SEQUENCE is kept as it is, except that
/// a value encoded as a PrintableString is upper-cased (ASCII `a`-`z` only), loses its leading and
/// trailing blanks (space and tab) and has each run of blanks inside it folded to one space, the
/// lengths around it encoded again (RFC 5280 7.1, its rules (c) and (d)). Values of every other
/// string type (UTF8String, IA5String, ...) are left byte for byte. A Name that is not well formed
/// (an RDN that is not a non-empty SET, an attribute that is not a SEQUENCE of a type and one
/// value) has no normalized form.
///
/// libcrypto re-encodes names its own way (it sorts multi-valued RDNs, canonicalizes every string
/// type), so this walks the DER with a small bounded reader instead: single-byte tags, definite
/// lengths of up to four bytes, every length checked against what encloses it.
public enum NormalizedName {
    /// The normalized content of the Name whose full DER (a SEQUENCE) is `name`, or nil when
    /// `name` does not start with a well-formed Name. Bytes after the SEQUENCE are ignored.
    public static func content(ofName name: [UInt8]) -> [UInt8]? {
        guard let outer = TLV(name, at: 0, end: name.count), outer.tag == 0x30 else { return nil }
        return content(name, from: outer.contentStart, to: outer.end)
    }

    /// The normalized Name as a DER SEQUENCE: `content(ofName:)` with its tag and length, as
    /// `SecCertificateCopyNormalizedIssuerSequence` and `...SubjectSequence` return it.
    public static func sequence(ofName name: [UInt8]) -> [UInt8]? {
        content(ofName: name).map { TLV.encode(tag: 0x30, $0) }
    }

    /// The normalized form of the RDN sequence in `der[start..<end]`.
    static func content(_ der: [UInt8], from start: Int, to end: Int) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(end - start)
        var offset = start
        while offset < end {
            guard let rdn = TLV(der, at: offset, end: end), rdn.tag == 0x31, rdn.contentStart < rdn.end else { return nil }
            var attributes: [UInt8] = []
            var changed = false
            var inner = rdn.contentStart
            while inner < rdn.end {
                guard let atv = TLV(der, at: inner, end: rdn.end), atv.tag == 0x30 else { return nil }
                guard let normalized = attribute(der, atv) else { return nil }
                if let normalized {
                    attributes += normalized
                    changed = true
                } else {
                    attributes += der[atv.start..<atv.end]
                }
                inner = atv.end
            }
            out += changed ? TLV.encode(tag: 0x31, attributes) : Array(der[rdn.start..<rdn.end])
            offset = rdn.end
        }
        return out
    }

    /// One AttributeTypeAndValue: nil when malformed; `.some(nil)` when normalizing leaves it as
    /// it is; otherwise its new encoding.
    private static func attribute(_ der: [UInt8], _ atv: TLV) -> [UInt8]?? {
        guard let type = TLV(der, at: atv.contentStart, end: atv.end), type.tag == 0x06, type.contentStart < type.end,
              let value = TLV(der, at: type.end, end: atv.end), value.end == atv.end else { return nil }
        guard value.tag == 0x13 else { return .some(nil) }  // PrintableString only
        let folded = fold(der[value.contentStart..<value.end])
        if folded.elementsEqual(der[value.contentStart..<value.end]) { return .some(nil) }
        return .some(TLV.encode(tag: 0x30, Array(der[type.start..<type.end]) + TLV.encode(tag: 0x13, folded)))
    }

    /// Upper-cases ASCII letters, drops leading and trailing blanks and folds inner runs of
    /// blanks (space, tab: C's `isblank`) to one space.
    static func fold(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var lastWasBlank = false
        for b in bytes {
            if b == 0x20 || b == 0x09 {
                if !lastWasBlank && !out.isEmpty { out.append(0x20) }
                lastWasBlank = true
            } else {
                lastWasBlank = false
                out.append((0x61...0x7a).contains(b) ? b - 0x20 : b)
            }
        }
        if lastWasBlank, out.last == 0x20 { out.removeLast() }
        return out
    }
}

/// One DER tag-length-value inside a bounded range.
struct TLV {
    let tag: UInt8
    let start: Int
    let contentStart: Int
    let end: Int

    /// The element at `offset`, which must end at or before `limit`; nil for a multi-byte tag,
    /// an indefinite or over-long length, or one that runs past `limit`.
    init?(_ der: [UInt8], at offset: Int, end limit: Int) {
        guard offset >= 0, limit <= der.count, offset + 2 <= limit else { return nil }
        let tag = der[offset]
        guard tag & 0x1f != 0x1f else { return nil }
        let first = Int(der[offset + 1])
        var length = 0
        var header = 2
        if first < 0x80 {
            length = first
        } else {
            let count = first & 0x7f
            guard (1...4).contains(count), offset + 2 + count <= limit else { return nil }
            for i in 0..<count { length = length << 8 | Int(der[offset + 2 + i]) }
            header += count
        }
        guard length <= limit - offset - header else { return nil }
        self.tag = tag
        start = offset
        contentStart = offset + header
        end = offset + header + length
    }

    /// `tag`, the minimal DER length of `content`, then `content`.
    static func encode(tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let n = content.count
        var out: [UInt8] = [tag]
        if n < 0x80 {
            out.append(UInt8(n))
        } else {
            var bytes: [UInt8] = []
            var rest = n
            while rest > 0 {
                bytes.insert(UInt8(rest & 0xff), at: 0)
                rest >>= 8
            }
            out.append(0x80 | UInt8(bytes.count))
            out += bytes
        }
        return out + content
    }
}
