/// Options of `keychainfs mount -o ...` and of an fstab line.
public struct MountOptions: Sendable, Equatable {
    /// Let other users reach the mount (`allow_other`); the kernel still applies each file's mode.
    public var allowOther = false
    /// Refuse every change with EROFS.
    public var readOnly = false
    /// Let the kernel cache secrets in the page cache (`kernel_cache`). Off by default, so no
    /// plaintext stays in the page cache: every read comes to the daemon (direct I/O).
    public var kernelCache = false

    public init() {}

    /// Parses a comma-separated option list. Options that mount(8) passes and that do not
    /// change keychainfs (`rw`, `defaults`, `nodev`, `nosuid`, `noexec`, `noatime`, `_netdev`,
    /// `default_permissions`) are accepted.
    /// - Throws: `MountOptionError` naming the first unknown option.
    public init(parsing list: String) throws {
        for option in list.split(separator: ",").map(String.init) where !option.isEmpty {
            switch option {
            case "allow_other": allowOther = true
            case "ro": readOnly = true
            case "rw": readOnly = false
            case "kernel_cache": kernelCache = true
            case "direct_io": kernelCache = false
            case "defaults", "nodev", "nosuid", "noexec", "noatime", "relatime", "_netdev", "default_permissions",
                 "auto", "noauto", "user", "nouser", "dev", "suid", "exec":
                continue
            default: throw MountOptionError(option: option)
            }
        }
    }

    public var description: String {
        [allowOther ? "allow_other" : nil, readOnly ? "ro" : "rw", kernelCache ? "kernel_cache" : nil]
            .compactMap { $0 }.joined(separator: ",")
    }
}

public struct MountOptionError: Error, Sendable {
    public let option: String
}
