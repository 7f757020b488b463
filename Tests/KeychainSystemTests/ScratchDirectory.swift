import Foundation
import KeychainSystem

/// A directory of its own for one test, removed with everything in it by `remove()`.
struct ScratchDirectory {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.path + "/keychainfs-system-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }
}

/// The `Errno` an expression threw, or nil when it threw something else or nothing.
func thrownErrno<T>(_ body: () throws -> T) -> Errno? {
    do { _ = try body(); return nil } catch { return error as? Errno }
}
