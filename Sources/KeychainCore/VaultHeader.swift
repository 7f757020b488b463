import KeychainCrypto

/// The vault header: format version, KDF parameters, identifiers and the wrapped class and index
/// keys. Stored as one blob in the `meta` table; its layout is in docs/vault-format.md.
public struct VaultHeader: Equatable {
    static let magic: [UInt8] = Array("KCFSVLT".utf8) + [0]
    /// The newest format this build reads and writes.
    static let currentFormat: UInt16 = 1
    static let kdfArgon2id13: UInt8 = 1

    /// Which key wraps a wrapped-key entry.
    enum Wrapper: UInt8 {
        /// The passphrase key.
        case passphrase = 1
        /// The device key.
        case device = 2
        /// The device key inside, the passphrase key outside.
        case deviceThenPassphrase = 3
    }

    /// What a wrapped-key entry holds: a class key (slot = protection code) or the index key.
    static let indexKeySlot: UInt8 = 0x10

    struct WrappedKey: Equatable {
        var slot: UInt8
        var wrapper: Wrapper
        var box: [UInt8]
    }

    var format: UInt16 = currentFormat
    var hasPassphrase: Bool
    var kdf: KDFParameters
    var salt: [UInt8]
    var vaultID: [UInt8]
    var deviceKeyID: [UInt8]
    var keys: [WrappedKey]

    public enum ParseError: Error, Equatable {
        case notAVault, newerFormat(UInt16), malformed
    }

    /// Serialises the header.
    public func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.raw(VaultHeader.magic)
        w.u16(format)
        w.u16(hasPassphrase ? 1 : 0)
        w.u8(VaultHeader.kdfArgon2id13)
        w.u64(kdf.opsLimit)
        w.u64(kdf.memLimit)
        w.raw(salt)
        w.raw(vaultID)
        w.raw(deviceKeyID)
        w.u8(UInt8(keys.count))
        for k in keys {
            w.u8(k.slot)
            w.u8(k.wrapper.rawValue)
            w.u16(UInt16(k.box.count))
            w.raw(k.box)
        }
        return w.bytes
    }

    /// Parses a header, rejecting anything malformed, truncated, over-long or from a newer format.
    public static func parse(_ bytes: [UInt8]) throws -> VaultHeader {
        try bytes.withUnsafeBytes { buf in
            var r = ByteReader(buf)
            do {
                guard try r.raw(magic.count) == magic else { throw ParseError.notAVault }
                let format = try r.u16()
                guard format >= 1 else { throw ParseError.malformed }
                guard format <= currentFormat else { throw ParseError.newerFormat(format) }
                let flags = try r.u16()
                guard flags & ~1 == 0 else { throw ParseError.malformed }
                guard try r.u8() == kdfArgon2id13 else { throw ParseError.malformed }
                let kdf = KDFParameters(opsLimit: try r.u64(), memLimit: try r.u64())
                guard kdf.isValid else { throw ParseError.malformed }
                let salt = try r.raw(PasswordHash.saltLength)
                let vaultID = try r.raw(16)
                let deviceKeyID = try r.raw(16)
                let count = Int(try r.u8())
                var keys: [WrappedKey] = []
                var seen = Set<[UInt8]>()
                for _ in 0..<count {
                    let slot = try r.u8()
                    guard let wrapper = Wrapper(rawValue: try r.u8()) else { throw ParseError.malformed }
                    guard slot == indexKeySlot || ProtectionClass(code: slot) != nil else { throw ParseError.malformed }
                    guard seen.insert([slot, wrapper.rawValue]).inserted else { throw ParseError.malformed }
                    let length = Int(try r.u16())
                    guard length >= AEAD.overhead + 32 else { throw ParseError.malformed }
                    keys.append(WrappedKey(slot: slot, wrapper: wrapper, box: try r.raw(length)))
                }
                guard r.remaining == 0 else { throw ParseError.malformed }
                return VaultHeader(format: format, hasPassphrase: flags & 1 == 1, kdf: kdf, salt: salt,
                                   vaultID: vaultID, deviceKeyID: deviceKeyID, keys: keys)
            } catch is ByteReader.Truncated {
                throw ParseError.malformed
            }
        }
    }

    func entry(slot: UInt8, wrapper: Wrapper) -> WrappedKey? {
        keys.first { $0.slot == slot && $0.wrapper == wrapper }
    }

    /// Associated data for a wrapped key. Passphrase-wrapped entries also cover the KDF
    /// parameters, salt and flags, so those header fields cannot be altered unnoticed.
    /// The inner (device) layer of a `deviceThenPassphrase` entry passes `outerLayer: false`.
    func associatedData(slot: UInt8, wrapper: Wrapper, outerLayer: Bool = true) -> [UInt8] {
        var w = ByteWriter()
        w.raw(Array("keychainfs key v1".utf8))
        w.raw(vaultID)
        w.u8(slot)
        w.u8(wrapper.rawValue)
        if wrapper != .device && outerLayer {
            w.u16(hasPassphrase ? 1 : 0)
            w.u64(kdf.opsLimit)
            w.u64(kdf.memLimit)
            w.raw(salt)
        }
        return w.bytes
    }
}
