import Foundation
import Synchronization
import XCTest

/// A test case with a CLI harness (a scratch directory, its vault and daemon), made in
/// `setUpWithError` and torn down in `tearDown` whether the test passed or not. Subclasses that
/// override either call `super`.
open class HarnessTestCase: XCTestCase {
    package var h: CLIHarness!

    /// Whether `setUpWithError` creates the harness vault (passphrase "pass phrase 1"); false for
    /// tests that make their own vault files.
    open class var createsVault: Bool { true }
    /// Whether the runtime directory is made up front, root's and 0755, so that other users (test
    /// users, mount helpers) reach the daemon that root starts.
    open class var sharesRuntimeDirectory: Bool { false }

    open override func setUpWithError() throws {
        try super.setUpWithError()
        h = try CLIHarness()
        if Self.sharesRuntimeDirectory { try h.shareRuntimeDirectory() }
        if Self.createsVault { try h.createVault() }
    }

    open override func tearDown() {
        h?.tearDown()
        h = nil
        super.tearDown()
    }
}

extension CLIHarness {
    /// Makes the runtime directory root's and 0755: root starts the daemon, other users only connect.
    package func shareRuntimeDirectory() throws {
        try FileManager.default.createDirectory(atPath: runtimeDir, withIntermediateDirectories: true)
        guard chmod(runtimeDir, 0o755) == 0 else { throw CocoaError(.fileWriteNoPermission) }
    }
}

/// Unix users and one group that a test class shares: made at the first test's `require()`, removed
/// in the class `tearDown` (`remove()`). The names end in a suffix unique to the run
/// (`ClassUsers.runSuffix()`), so two runs on one machine never add or delete each other's users.
package final class ClassUsers: Sendable {
    package let group: String
    package let users: [String]
    /// The users added to `group`.
    package let members: [String]
    /// nil until `make` ran; then whether every user and the group exist.
    private let made = Mutex<Bool?>(nil)

    /// Six random letters; names are a four-letter prefix and this.
    package static func runSuffix() -> String { String(TestAccounts.uniqueName().dropFirst(4)) }

    package init(group: String, users: [String], members: [String]) {
        self.group = group
        self.users = users
        self.members = members
    }

    /// Makes the group and the users (no home, no login shell) and adds the members, once;
    /// skips the test unless it runs as root and every user and the group exist.
    package func require() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root to create users") }
        let all = made.withLock { made -> Bool in
            if let made { return made }
            _ = runTool(["/usr/sbin/groupadd", group])
            for u in users { _ = runTool(["/usr/sbin/useradd", "-M", "-N", "-s", "/usr/sbin/nologin", u]) }
            for m in members { _ = runTool(["/usr/sbin/usermod", "-aG", group, m]) }
            made = users.allSatisfy { getpwnam($0) != nil } && getgrnam(group) != nil
            return made!
        }
        guard all else { throw XCTSkip("could not create the test users") }
    }

    /// Removes the users and the group if `require` made them (from the class `tearDown`).
    package func remove() {
        made.withLock { made in
            guard made != nil else { return }
            for u in users { _ = runTool(["/usr/sbin/userdel", u]) }
            _ = runTool(["/usr/sbin/groupdel", group])
            made = nil
        }
    }

    /// setpriv's arguments that run a command as `user` with its groups from /etc/group
    /// (`initGroups`) or with none.
    package static func setpriv(_ user: String, initGroups: Bool = true,
                                file: StaticString = #filePath, line: UInt = #line) -> [String] {
        guard let pw = getpwnam(user) else {
            XCTFail("no user \(user)", file: file, line: line)
            return []
        }
        return ["/usr/bin/setpriv", "--reuid", String(pw.pointee.pw_uid), "--regid", String(pw.pointee.pw_gid),
                initGroups ? "--init-groups" : "--clear-groups"]
    }
}

/// Sets field `field` (from 0; fields are tab-separated) of line `line` (from 1) of the audit
/// log file at `path` to `value`, keeping every other byte: the line's chain value no longer
/// matches it, so `audit --verify` reports that line broken.
package func changeAuditField(_ field: Int, ofLine line: Int, in path: String, to value: String) throws {
    var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        .map(String.init)
    var fields = lines[line - 1].split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
    fields[field] = value
    lines[line - 1] = fields.joined(separator: "\t")
    try lines.joined(separator: "\n").write(toFile: path, atomically: false, encoding: .utf8)
}
