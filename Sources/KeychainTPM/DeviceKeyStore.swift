import KeychainCore
import KeychainCrypto
import KeychainSystem

/// Why no device key could be had. The description names the file and the TCTI, never a secret.
public struct DeviceKeyError: Error, CustomStringConvertible {
    public let description: String
    public let status: KeychainStatus
    init(_ description: String, status: KeychainStatus) {
        self.description = description
        self.status = status
    }
}

/// The device key file (`$KEYCHAINFS_DEVICE_KEY`, `DeviceKey.defaultPath()`) in either form: 32
/// plain bytes, or a key sealed by the TPM (`SealedKey`, starting with "KCFSTPM"). The file, not
/// the vault, decides: every vault of the user shares it. There is never a fallback from a
/// sealed key to a plain one.
public enum DeviceKeyStore {
    public enum Contents {
        case missing
        case plain
        case sealed(SealedKey)
    }

    /// Reads the file with the checks `DeviceKey` applies to a plain key: not a symlink, owned by
    /// the caller or root, not writable by group or others.
    public static func read(at path: String = DeviceKey.defaultPath()) throws -> Contents {
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(path, .readOnly, options: .noFollow) } catch {
            let reason = Errno(error)
            if reason == .noSuchFile { return .missing }
            throw DeviceKeyError("cannot read the device key file \(path): \(reason)", status: .io)
        }
        defer { try? fd.close() }
        guard let st = try? fd.status(), st.owner == CurrentProcess.effectiveUserID || st.owner == 0,
              st.permissions.isDisjoint(with: .groupOrOtherWrite), st.size < 65536 else {
            throw DeviceKeyError("the device key file \(path) has an unsafe owner, mode or size", status: .io)
        }
        if st.size == Int64(DeviceKey.length) { return .plain }
        var bytes = [UInt8](repeating: 0, count: Int(st.size))
        let n = bytes.withUnsafeMutableBytes { (try? fd.read(into: $0)) ?? -1 }
        guard n == bytes.count, SealedKey.looksSealed(bytes) else {
            throw DeviceKeyError("the device key file \(path) is neither a plain key nor a TPM-sealed one", status: .io)
        }
        do { return .sealed(try SealedKey.parse(bytes)) } catch {
            throw DeviceKeyError("\(path): \(error)", status: .decode)
        }
    }

    /// The device key for the vault at `vault`: unsealed by the TPM when the file is sealed; the
    /// plain file (made when missing) otherwise, unless the vault records a TPM-sealed key, which
    /// neither a missing file nor a plain one stands in for.
    /// - Throws: `DeviceKeyError` naming the file, the TCTI and the reason.
    public static func load(forVault vault: String, path: String = DeviceKey.defaultPath()) throws -> DeviceKey {
        switch try read(at: path) {
        case .missing where Vault.recordedDeviceKeyKind(at: vault) == "tpm2":
            throw DeviceKeyError("this vault's device key is sealed by a TPM, but \(path) is missing: "
                                 + "its ThisDeviceOnly items cannot be opened; restore the file (no new key is made)", status: .notAvailable)
        case .plain where Vault.recordedDeviceKeyKind(at: vault) == "tpm2":
            // Not the TPM's key: new ThisDeviceOnly items would be wrapped under whatever was put there.
            throw DeviceKeyError("this vault's device key is sealed by a TPM, but \(path) holds a plain key: "
                                 + "it is not used in the sealed key's place; restore the sealed file", status: .notAvailable)
        case .missing, .plain:
            do { return try DeviceKey.loadOrCreate(at: path) } catch {
                throw DeviceKeyError("cannot read or create the device key file \(path)", status: .io)
            }
        case .sealed(let sealed):
            return try unseal(sealed, path: path)
        }
    }

    /// Unseals with the configured TPM. - Throws: `DeviceKeyError` with the TPM's reason.
    public static func unseal(_ sealed: SealedKey, path: String) throws -> DeviceKey {
        do {
            let tpm = try TPM()
            return try deviceKey(unsealed: try tpm.unseal(sealed), path: path)
        } catch let e as TPMError {
            throw DeviceKeyError("device key \(path): \(e)", status: e.status)
        }
    }

    /// The device key the TPM unsealed from `path`'s primary or recovery copy.
    /// - Throws: `DeviceKeyError` (errSecDecode) when it is not 32 bytes: the sealed object is
    ///   not a device key (sealed by another tool or damaged), and nothing may use it as one.
    public static func deviceKey(unsealed bytes: SecureBytes, path: String) throws -> DeviceKey {
        let count = bytes.count
        guard count == DeviceKey.length else {
            bytes.wipe()
            throw DeviceKeyError("device key \(path): the TPM unsealed \(count) bytes, not a \(DeviceKey.length)-byte device key",
                                 status: .decode)
        }
        return DeviceKey(key: bytes)
    }

    /// Writes `sealed` to `path` atomically (a 0400 file beside it, fsynced, renamed over it,
    /// the directory fsynced), after checking that this TPM unseals it to `expected`. The file
    /// beside it is this process's own (`PATH.new.PID.RANDOM`): two writers at once (two
    /// reseals, a seal and a create-keychain) never remove or rename each other's half-written
    /// file, so `path` always holds a whole sealed key.
    public static func install(_ sealed: SealedKey, expected: DeviceKey, with tpm: TPM, at path: String) throws {
        let check = try tpm.unseal(sealed)
        defer { check.wipe() }
        guard check.constantTimeEquals(expected.key) else {
            throw DeviceKeyError("the TPM unsealed another key than it sealed; nothing was changed", status: .internalComponent)
        }
        let nonce = try SecureBytes.random(count: 8).withUnsafeBytes { $0.map { String($0, radix: 16) }.joined() }
        let temporary = path + ".new.\(CurrentProcess.id).\(nonce)"
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(temporary, .writeOnly, options: [.create, .exclusiveCreate, .noFollow], permissions: .ownerRead)
        } catch { throw DeviceKeyError("cannot write \(temporary): \(Errno(error))", status: .io) }
        let bytes = sealed.encoded()
        let written = bytes.withUnsafeBytes { (try? fd.writeAll($0)) != nil }
        let synced = (try? fd.sync()) != nil
        try? fd.close()
        guard written, synced, (try? FileSystem.rename(temporary, to: path)) != nil else {
            try? FileSystem.remove(temporary)
            throw DeviceKeyError("cannot write \(path)", status: .io)
        }
        let dir = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(path[..<$0]) } ?? "."
        if let dfd = try? FileDescriptor.open(dir.isEmpty ? "/" : dir, .readOnly, options: .directory) {
            try? dfd.sync()
            try? dfd.close()
        }
    }
}
