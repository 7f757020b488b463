import Foundation
import Glibc

/// Files that tests run as other users (the built binary, the attacker scripts) must be
/// reachable by them. A checkout in a private directory (`/root`, a `mktemp -d`) is not: then
/// they are copied once into a directory of this test process that everyone may enter, removed
/// when the process exits.
package enum SharedCopies {
    /// `path` itself when every user can reach it, else its copy (a file or a directory).
    /// - Parameter companions: files that must stay beside it (`keychainfs-daemon` beside
    ///   `keychainfs`): copied into the same directory with it.
    package static func reachable(_ path: String, with companions: [String] = []) -> String {
        if everyoneReaches(path) && companions.allSatisfy(everyoneReaches) { return path }
        return lock.withLock {
            if let copy = copies[path] { return copy }
            for c in companions { _ = copyIn(c) }
            guard let copy = copyIn(path) else { return path }
            copies[path] = copy
            return copy
        }
    }

    /// Copies `path` into `directory`; nil when that fails.
    private static func copyIn(_ path: String) -> String? {
        let copy = directory + "/" + (path as NSString).lastPathComponent
        try? FileManager.default.removeItem(atPath: copy)
        do { try FileManager.default.copyItem(atPath: path, toPath: copy) } catch { return nil }
        chmodTree(copy)
        return copy
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var copies: [String: String] = [:]

    private static let directory: String = {
        let dir = "/tmp/kcfs-shared-\(getpid())"
        mkdir(dir, 0o755)
        chmod(dir, 0o755)
        removeAtExit = dir
        atexit { if let dir = SharedCopies.removeAtExit { try? FileManager.default.removeItem(atPath: dir) } }
        return dir
    }()

    nonisolated(unsafe) private static var removeAtExit: String?

    /// Every directory above `path` searchable by others, and `path` readable by them.
    private static func everyoneReaches(_ path: String) -> Bool {
        var st = stat()
        guard stat(path, &st) == 0, st.st_mode & 0o004 != 0 else { return false }
        var dir = (path as NSString).deletingLastPathComponent
        while !dir.isEmpty && dir != "/" {
            guard stat(dir, &st) == 0, st.st_mode & 0o001 != 0 else { return false }
            dir = (dir as NSString).deletingLastPathComponent
        }
        return true
    }

    private static func chmodTree(_ path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return }
        if st.st_mode & S_IFMT == S_IFDIR {
            chmod(path, 0o755)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] { chmodTree(path + "/" + name) }
        } else {
            chmod(path, st.st_mode & 0o100 != 0 ? 0o755 : 0o644)
        }
    }
}
