import KeychainCore
/// Options of `keychainfs mount -o ...` and of an fstab line.
public struct MountOptions: Sendable, Equatable {
    /// Let other users reach the mount (`allow_other`); the kernel still applies each file's mode.
    public var allowOther = false
    /// Refuse every change with EROFS.
    public var readOnly = false
    /// Let the kernel cache secrets in the page cache (`kernel_cache`). Off by default, so no
    /// plaintext stays in the page cache: every read comes to the daemon (direct I/O).
    public var kernelCache = false
    /// A view: only these access groups (`groups=A:B`).
    public var groups: [String]?
    /// A view's file owner and group (`map_uid=N`, `map_gid=N`), for a container's user.
    public var mapUID: UInt32?
    public var mapGID: UInt32?
    /// The permission bits every file shows (`mode=0400`), in place of its group's mode, so that
    /// strict readers (libpq's passfile wants no group or other bits) accept a shared group's
    /// file; the kernel enforces them (`default_permissions`).
    public var fileMode: UInt16?
    /// A command run (through /bin/sh) once per change of an item this mount shows (`on_change=`).
    public var onChange: String?

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
            case _ where option.hasPrefix("groups="):
                let names = option.dropFirst(7).split(separator: ":").map(String.init)
                guard !names.isEmpty else { throw MountOptionError(option: option) }
                groups = names
            case _ where option.hasPrefix("map_uid="):
                guard let n = UInt32(option.dropFirst(8)) else { throw MountOptionError(option: option) }
                mapUID = n
            case _ where option.hasPrefix("on_change="):
                let command = String(option.dropFirst(10))
                guard !command.isEmpty else { throw MountOptionError(option: option) }
                onChange = command
            case _ where option.hasPrefix("mode="):
                guard let n = UInt16(option.dropFirst(5), radix: 8), n <= 0o777 else { throw MountOptionError(option: option) }
                fileMode = n
            case _ where option.hasPrefix("map_gid="):
                guard let n = UInt32(option.dropFirst(8)) else { throw MountOptionError(option: option) }
                mapGID = n
            case "defaults", "nodev", "nosuid", "noexec", "noatime", "relatime", "_netdev", "default_permissions",
                 "auto", "noauto", "user", "nouser", "dev", "suid", "exec":
                continue
            default: throw MountOptionError(option: option)
            }
        }
    }

    public var description: String {
        [allowOther ? "allow_other" : nil, readOnly ? "ro" : "rw", kernelCache ? "kernel_cache" : nil,
         groups.map { "groups=" + $0.joined(separator: ":") }, mapUID.map { "map_uid=\($0)" }, mapGID.map { "map_gid=\($0)" },
         fileMode.map { "mode=0" + String($0, radix: 8) }]
            .compactMap { $0 }.joined(separator: ",")
    }
}

public struct MountOptionError: KeychainStatusConvertible, Sendable {
    public var status: KeychainStatus { .param }
    public let option: String
}
