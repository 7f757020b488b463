import KeychainCrypto
import KeychainSystem

/// The per-machine key kept outside the vault file (PRODUCT 4). ThisDeviceOnly and Always class
/// keys are wrapped with it, so a copied vault or a backup never opens them elsewhere.
public final class DeviceKey: Sendable {
    public static let length = 32
    /// The key bytes; package-visible so KeychainTPM can seal them.
    package let key: SecureBytes

    /// Wraps existing key bytes (tests, migration tools).
    public init(key: SecureBytes) {
        precondition(key.count == DeviceKey.length)
        self.key = key
    }

    /// A 16-byte public identifier of this key, stored in the vault header to tell
    /// "another machine" apart from "tampered".
    package var identifier: [UInt8] {
        KeyedHash.hash(Array("keychainfs device key id v1".utf8), key: key, length: 16)
    }

    /// Where the device key lives unless told otherwise: `$KEYCHAINFS_DEVICE_KEY`, else
    /// `/var/lib/keychainfs/device.key` for root, else `$XDG_STATE_HOME/keychainfs/device.key`
    /// (default `~/.local/state/keychainfs/device.key`).
    public static func defaultPath() -> String {
        if let p = CurrentProcess.environment("KEYCHAINFS_DEVICE_KEY") { return p }
        if CurrentProcess.effectiveUserID == 0 { return "/var/lib/keychainfs/device.key" }
        if let s = CurrentProcess.environment("XDG_STATE_HOME") { return s + "/keychainfs/device.key" }
        return homeDirectory() + "/.local/state/keychainfs/device.key"
    }

    /// Loads the key at `path`, creating it (mode 0400, parent directories 0700) when missing.
    /// - Throws: `KeychainStatus.io` when the file cannot be read or created, or has the wrong size.
    public static func loadOrCreate(at path: String = defaultPath()) throws -> DeviceKey {
        if let existing = try load(at: path) { return existing }
        try makeDirectories(for: path)
        let fresh = try SecureBytes.random(count: length)
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, .writeOnly, options: [.create, .exclusiveCreate], permissions: .ownerRead)
        } catch {
            // Another process created it first: use theirs.
            if Errno(error) == .fileExists, let existing = try load(at: path) { return existing }
            throw KeychainStatus.io
        }
        defer { try? fd.close() }
        let ok = fresh.withUnsafeBytes { (try? fd.writeAll($0)) != nil }
        guard ok, (try? fd.sync()) != nil else { try? FileSystem.remove(path); throw KeychainStatus.io }
        return DeviceKey(key: fresh)
    }

    /// Loads the key at `path`, or nil when there is no such file.
    /// - Throws: `io` when the file is not exactly 32 bytes, or is owned by another user than
    ///   the caller or root, or is writable by group or others (someone could plant a known key).
    static func load(at path: String) throws -> DeviceKey? {
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(path, .readOnly, options: .noFollow) } catch {
            if Errno(error) == .noSuchFile { return nil }
            throw KeychainStatus.io
        }
        defer { try? fd.close() }
        guard let st = try? fd.status(), st.size == Int64(length),
              st.owner == CurrentProcess.effectiveUserID || st.owner == 0,
              st.permissions.isDisjoint(with: .groupOrOtherWrite) else { throw KeychainStatus.io }
        let key = try SecureBytes(count: length)
        let n = key.withUnsafeMutableBytes { (try? fd.read(into: $0)) ?? -1 }
        guard n == length else { throw KeychainStatus.io }
        return DeviceKey(key: key)
    }

    /// `$HOME`, else the password database's home for this user.
    private static func homeDirectory() -> String {
        CurrentProcess.environment("HOME") ?? UserDatabase.homeDirectory(of: CurrentProcess.effectiveUserID) ?? "/"
    }

    private static func makeDirectories(for path: String) throws {
        let chars = Array(path.utf8)
        for (i, c) in chars.enumerated() where c == UInt8(ascii: "/") && i > 0 {
            let prefix = String(decoding: chars[0..<i], as: UTF8.self)
            do { try FileSystem.createDirectory(prefix, permissions: [.ownerRead, .ownerWrite, .ownerExecute]) } catch {
                if Errno(error) != .fileExists { throw KeychainStatus.io }
            }
        }
    }
}
