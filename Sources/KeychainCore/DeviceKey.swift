import Glibc
import KeychainCrypto

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
        if let p = getenv("KEYCHAINFS_DEVICE_KEY"), p.pointee != 0 { return String(cString: p) }
        if geteuid() == 0 { return "/var/lib/keychainfs/device.key" }
        if let s = getenv("XDG_STATE_HOME"), s.pointee != 0 { return String(cString: s) + "/keychainfs/device.key" }
        return homeDirectory() + "/.local/state/keychainfs/device.key"
    }

    /// Loads the key at `path`, creating it (mode 0400, parent directories 0700) when missing.
    /// - Throws: `KeychainStatus.io` when the file cannot be read or created, or has the wrong size.
    public static func loadOrCreate(at path: String = defaultPath()) throws -> DeviceKey {
        if let existing = try load(at: path) { return existing }
        try makeDirectories(for: path)
        let fresh = try SecureBytes.random(count: length)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o400)
        if fd < 0 {
            // Another process created it first: use theirs.
            if errno == EEXIST, let existing = try load(at: path) { return existing }
            throw KeychainStatus.io
        }
        defer { close(fd) }
        let ok = fresh.withUnsafeBytes { write(fd, $0.baseAddress, length) == length }
        guard ok, fsync(fd) == 0 else { unlink(path); throw KeychainStatus.io }
        return DeviceKey(key: fresh)
    }

    /// Loads the key at `path`, or nil when there is no such file.
    /// - Throws: `io` when the file is not exactly 32 bytes, or is owned by another user than
    ///   the caller or root, or is writable by group or others (someone could plant a known key).
    static func load(at path: String) throws -> DeviceKey? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw KeychainStatus.io
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size == off_t(length), st.st_uid == geteuid() || st.st_uid == 0,
              st.st_mode & 0o022 == 0 else { throw KeychainStatus.io }
        let key = try SecureBytes(count: length)
        let n = key.withUnsafeMutableBytes { read(fd, $0.baseAddress, length) }
        guard n == length else { throw KeychainStatus.io }
        return DeviceKey(key: key)
    }

    /// `$HOME`, else the password database's home for this user.
    private static func homeDirectory() -> String {
        if let h = getenv("HOME"), h.pointee != 0 { return String(cString: h) }
        if let pw = getpwuid(geteuid()), let dir = pw.pointee.pw_dir { return String(cString: dir) }
        return "/"
    }

    private static func makeDirectories(for path: String) throws {
        let chars = Array(path.utf8)
        for (i, c) in chars.enumerated() where c == UInt8(ascii: "/") && i > 0 {
            let prefix = String(decoding: chars[0..<i], as: UTF8.self)
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { throw KeychainStatus.io }
        }
    }
}
