import Foundation
import KeychainProtocol
import KeychainTestSupport
import Security
import XCTest

/// A file the kernel and the daemon already know shows every change the moment the change
/// returns, whichever interface made it: no stale name, attribute or secret (PRODUCT 6).
/// Each read here comes right after the change, without a sleep.
final class MountCoherenceTests: MountTestCase {
    /// Points the Security module of this process at the harness's daemon for `body`.
    private func withSecurityAPI(_ body: () throws -> Void) throws {
        let saved = ProcessInfo.processInfo.environment["KEYCHAINFS_SOCKET"]
        let socket = h.runtimeDir + "/" + URL(fileURLWithPath: Paths.socket(forVault: h.vault)).lastPathComponent
        XCTAssertTrue(FileManager.default.fileExists(atPath: socket), "the daemon listens at \(socket)")
        setenv("KEYCHAINFS_SOCKET", socket, 1)
        defer { if let saved { setenv("KEYCHAINFS_SOCKET", saved, 1) } else { unsetenv("KEYCHAINFS_SOCKET") } }
        try body()
    }

    private func genp(_ service: String, _ account: String? = nil) -> [String: Any] {
        var q: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service]
        if let account { q[kSecAttrAccount as String] = account }
        return q
    }

    private func update(_ query: [String: Any], _ changes: [String: Any], file: StaticString = #filePath, line: UInt = #line) {
        var status = SecItemUpdate(query as CFDictionary, changes as CFDictionary)
        if status == errSecNotAvailable { status = SecItemUpdate(query as CFDictionary, changes as CFDictionary) }  // an earlier class's connection
        XCTAssertEqual(status, errSecSuccess, "SecItemUpdate \(changes.keys.sorted())", file: file, line: line)
    }

    func testChangesThroughTheAPIShowAtOnce() throws {
        try add("svc", "old", "first secret")
        try add("svc", "keep", "kept secret")
        try add("moved", "acct", "moving secret")
        let mnt = try mount()
        // The mount learns every name and reads every file once, so it knows them all.
        XCTAssertEqual(FS.read(mnt + "/svc/old").bytes, Array("first secret".utf8))
        XCTAssertEqual(FS.read(mnt + "/svc/keep").bytes, Array("kept secret".utf8))
        XCTAssertEqual(FS.read(mnt + "/moved/acct").bytes, Array("moving secret".utf8))

        try withSecurityAPI {
            // A new secret.
            update(genp("svc", "old"), [kSecValueData as String: Data("second secret".utf8)])
            XCTAssertEqual(FS.read(mnt + "/svc/old").bytes, Array("second secret".utf8), "the new secret")
            XCTAssertEqual(FS.stat(mnt + "/svc/old").st.map { Int($0.st_size) }, 13, "the new size")

            // An account renamed: the old name is gone, the new one reads.
            update(genp("svc", "old"), [kSecAttrAccount as String: "new"])
            assertErrno(FS.read(mnt + "/svc/old").errno, ENOENT, "the old name after a rename")
            XCTAssertEqual(FS.read(mnt + "/svc/new").bytes, Array("second secret".utf8), "the new name")

            // A service renamed by a query that names no account.
            update(genp("moved"), [kSecAttrService as String: "arrived"])
            assertErrno(FS.read(mnt + "/moved/acct").errno, ENOENT, "the old service after a rename")
            XCTAssertEqual(FS.read(mnt + "/arrived/acct").bytes, Array("moving secret".utf8), "the new service")

            // A label changed by a query that names neither service nor account.
            update([kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "keep"],
                   [kSecAttrLabel as String: "relabelled"])
            XCTAssertEqual(FS.xattr(mnt + "/svc/keep", "user.keychain.label"), "relabelled", "the new label")

            // Deleted by persistent reference: nothing in the query names the file.
            var q = genp("svc", "keep")
            q[kSecReturnPersistentRef as String] = kCFBooleanTrue!
            var ref: CFTypeRef?
            XCTAssertEqual(SecItemCopyMatching(q as CFDictionary, &ref), errSecSuccess)
            let persistent = try XCTUnwrap(ref as? Data)
            XCTAssertEqual(SecItemDelete([kSecClass as String: kSecClassGenericPassword,
                                          kSecValuePersistentRef as String: persistent] as CFDictionary), errSecSuccess)
            assertErrno(FS.read(mnt + "/svc/keep").errno, ENOENT, "a file deleted by reference")
        }
        XCTAssertEqual(FS.list(mnt + "/svc").names?.sorted(), ["new"])
    }

    func testChangesThroughTheCLIAndAnotherMountShowAtOnce() throws {
        try add("svc", "acct", "one")
        let first = try mount()
        let second = try mount()
        XCTAssertEqual(FS.read(first + "/svc/acct").bytes, Array("one".utf8))
        XCTAssertEqual(FS.read(second + "/svc/acct").bytes, Array("one".utf8))

        XCTAssertEqual(try h.run(["add-generic-password", "-U", "-s", "svc", "-a", "acct", "-w", "two"]).status, 0)
        XCTAssertEqual(FS.read(first + "/svc/acct").bytes, Array("two".utf8), "after add -U")

        // Written through one mount, read through the other.
        XCTAssertEqual(FS.write(first + "/svc/acct", "three"), FS.ok)
        XCTAssertEqual(FS.read(first + "/svc/acct").bytes, Array("three".utf8), "the writing mount")
        XCTAssertTrue(h.waitUntil(5) { FS.read(second + "/svc/acct").bytes == Array("three".utf8) }, "the other mount")

        // Renamed through one mount: gone under the old name in both.
        XCTAssertEqual(FS.check(rename(first + "/svc/acct", first + "/svc/renamed")), FS.ok)
        assertErrno(FS.read(first + "/svc/acct").errno, ENOENT, "the old name in the renaming mount")
        XCTAssertEqual(FS.read(first + "/svc/renamed").bytes, Array("three".utf8))
        XCTAssertTrue(h.waitUntil(5) { FS.read(second + "/svc/acct").errno == ENOENT }, "the old name in the other mount")
        XCTAssertEqual(FS.read(second + "/svc/renamed").bytes, Array("three".utf8))

        // Truncated and relabelled through the mount, seen by the CLI and the other mount.
        XCTAssertEqual(FS.check(truncate(first + "/svc/renamed", 2)), FS.ok)
        XCTAssertEqual(FS.read(first + "/svc/renamed").bytes, Array("th".utf8), "after truncate")
        XCTAssertEqual(try secret("svc", "renamed"), "th")
        XCTAssertEqual(FS.setxattr(first + "/svc/renamed", "user.keychain.label", "fresh label"), FS.ok)
        XCTAssertEqual(FS.xattr(first + "/svc/renamed", "user.keychain.label"), "fresh label")
        XCTAssertTrue(h.waitUntil(5) { FS.xattr(second + "/svc/renamed", "user.keychain.label") == "fresh label" })

        // Deleted through the CLI.
        XCTAssertEqual(try h.run(["delete-generic-password", "-s", "svc", "-a", "renamed"]).status, 0)
        assertErrno(FS.read(first + "/svc/renamed").errno, ENOENT, "after delete-generic-password")
        assertErrno(FS.read(second + "/svc/renamed").errno, ENOENT, "after delete-generic-password")
    }

    /// The kernel keeps a directory's name and attributes longer than a file's (30 s): when this
    /// mount removes a directory's last item, or moves it to another directory, the directory is
    /// still gone at once, in this mount and in another one, as when the CLI removes it.
    func testADirectoryGoesWithItsLastFileRemovedOrMovedThroughTheMount() throws {
        try add("solo", "acct", "one")
        try add("moving", "acct", "two")
        try add("stays", "acct", "three")
        let mnt = try mount()
        let other = try mount()
        for m in [mnt, other] {
            XCTAssertEqual(FS.read(m + "/solo/acct").bytes, Array("one".utf8))
            XCTAssertEqual(FS.read(m + "/moving/acct").bytes, Array("two".utf8))
        }
        XCTAssertEqual(FS.check(unlink(mnt + "/solo/acct")), FS.ok)
        XCTAssertTrue(h.waitUntil(0.5) { FS.stat(mnt + "/solo").errno == ENOENT }, "the emptied directory in the removing mount")
        XCTAssertTrue(h.waitUntil(0.5) { FS.stat(other + "/solo").errno == ENOENT }, "the emptied directory in the other mount")

        XCTAssertEqual(FS.check(rename(mnt + "/moving/acct", mnt + "/stays/moved")), FS.ok)
        XCTAssertTrue(h.waitUntil(0.5) { FS.stat(mnt + "/moving").errno == ENOENT }, "the directory moved out of")
        XCTAssertTrue(h.waitUntil(0.5) { FS.stat(other + "/moving").errno == ENOENT }, "the same in the other mount")
        XCTAssertEqual(FS.read(mnt + "/stays/moved").bytes, Array("two".utf8))
        XCTAssertEqual(FS.read(mnt + "/stays/acct").bytes, Array("three".utf8), "a directory that keeps an item stays")
    }
}
