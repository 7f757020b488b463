import KeychainCore

/// A secret sealed by a TPM: the public and private areas of TPM-wrapped keyedhash objects,
/// useless without the TPM whose storage root key wrapped them. The file layout is in
/// docs/tpm.md ("The sealed device key file").
public struct SealedKey: Equatable, Sendable {
    static let magic: [UInt8] = Array("KCFSTPM".utf8) + [0]
    /// 1: no storage root key name; 2: with it (written by this build).
    static let currentFormat: UInt16 = 2

    /// One sealed object: TPM2B_PUBLIC and TPM2B_PRIVATE, marshalled as the TPM sends them.
    public struct Object: Equatable, Sendable {
        var publicArea: [UInt8]
        var privateArea: [UInt8]
    }

    /// The SHA-256 PCRs the primary copy is bound to (empty: bound to the TPM only).
    public var pcrs: [Int]
    /// Unsealed at every daemon start: needs the PCRs as they were at sealing.
    var primary: Object
    /// Bound to the TPM but not to PCRs; its auth value comes from the vault passphrase, so
    /// `device-key reseal` can recover after an expected PCR change. Absent without PCRs.
    public internal(set) var recovery: Object?
    public var hasRecoveryCopy: Bool { recovery != nil }
    /// The name (TPM2B_NAME: name algorithm and digest of the public area) of the storage root key
    /// the objects were sealed under, as the TPM gave it when sealing. Unsealing checks the storage
    /// root key against it before it salts a session to that key. Nil in a format 1 file.
    public internal(set) var rootName: [UInt8]?

    var pcrMask: UInt32 { pcrs.reduce(0) { $0 | 1 << UInt32($1) } }

    /// True when `bytes` start as a sealed key file does (a plain device key is 32 random bytes).
    public static func looksSealed(_ bytes: [UInt8]) -> Bool {
        bytes.count > magic.count && Array(bytes.prefix(magic.count)) == magic
    }

    public func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.raw(SealedKey.magic)
        w.u16(rootName == nil ? 1 : 2)
        w.u32(pcrMask)
        for o in [primary, recovery ?? Object(publicArea: [], privateArea: [])] {
            w.lengthPrefixed(o.publicArea)
            w.lengthPrefixed(o.privateArea)
        }
        if let rootName { w.lengthPrefixed(rootName) }
        return w.bytes
    }

    public enum ParseError: Error, CustomStringConvertible {
        case malformed, newerFormat(UInt16)
        public var description: String {
            switch self {
            case .malformed: return "the sealed device key file is damaged"
            case .newerFormat(let v): return "the sealed device key file has format \(v), newer than this build's \(SealedKey.currentFormat)"
            }
        }
    }

    public static func parse(_ bytes: [UInt8]) throws -> SealedKey {
        try bytes.withUnsafeBytes { buf in
            var r = ByteReader(buf)
            do {
                guard try r.raw(magic.count) == magic else { throw ParseError.malformed }
                let format = try r.u16()
                guard format >= 1 else { throw ParseError.malformed }
                guard format <= currentFormat else { throw ParseError.newerFormat(format) }
                let mask = try r.u32()
                guard mask >> 24 == 0 else { throw ParseError.malformed }
                var objects: [Object] = []
                for _ in 0..<2 {
                    let pub = try r.lengthPrefixed(), priv = try r.lengthPrefixed()
                    guard pub.count <= 4096, priv.count <= 4096 else { throw ParseError.malformed }
                    objects.append(Object(publicArea: pub, privateArea: priv))
                }
                // No recovery copy is written as two empty areas: a lone private area is damage.
                var rootName: [UInt8]?
                if format >= 2 {
                    let name = try r.lengthPrefixed()
                    guard !name.isEmpty, name.count <= 66 else { throw ParseError.malformed }  // sizeof(TPMU_NAME)
                    rootName = name
                }
                guard r.remaining == 0, !objects[0].publicArea.isEmpty,
                      !objects[1].publicArea.isEmpty || objects[1].privateArea.isEmpty else { throw ParseError.malformed }
                let pcrs = (0..<24).filter { mask & (1 << UInt32($0)) != 0 }
                return SealedKey(pcrs: pcrs, primary: objects[0], recovery: objects[1].publicArea.isEmpty ? nil : objects[1],
                                 rootName: rootName)
            } catch is ByteReader.Truncated {
                throw ParseError.malformed
            }
        }
    }

    /// PCR 16 (debug) and PCR 23 (application) of the PC Client profile: any program may reset
    /// them at locality 0 (TPM2_PCR_Reset) and extend them to any value again, so a policy on
    /// them binds nothing. Nothing is sealed to them.
    public static let resettablePCRs = [16, 23]
    static let resettableRefusal = "PCR 16 and 23 can be reset by any program, so a key bound to them is bound to nothing; "
        + "choose others, such as 7"

    /// Parses a `--tpm-pcrs` list ("7", "0,2,7", or "none" for no PCR policy); nil when malformed.
    public static func pcrList(_ text: String) -> [Int]? {
        if text == "none" { return [] }
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        var out: [Int] = []
        for p in parts {
            guard let n = Int(p), (0..<24).contains(n), !out.contains(n) else { return nil }
            out.append(n)
        }
        return out.isEmpty ? nil : out.sorted()
    }

    /// Why `pcrs` may not be sealed to, or nil when they may.
    public static func refusal(of pcrs: [Int]) -> String? {
        pcrs.contains(where: resettablePCRs.contains) ? resettableRefusal : nil
    }
}
