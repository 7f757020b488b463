import Foundation
import KeychainTestSupport
import XCTest

/// The manual pages against `help`, as a reader sees both: each page `keychainfs help --man PAGE`
/// prints, rendered by man(1), says every command's usage, summary and details word for word as
/// `keychainfs help COMMAND` prints them, and the exit statuses and environment of `keychainfs
/// help`; the helpers' pages name the actions their own usage lines name. Words are compared with
/// runs of white space as one space (man fills and indents the lines).
final class ManPageTests: XCTestCase {
    private static let pages = [("keychainfs", 1), ("keychainfs-daemon", 8), ("mount.fuse.keychainfs", 8),
                                ("git-credential-keychainfs", 1), ("docker-credential-keychainfs", 1)]
    private var dir = ""

    override func setUpWithError() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/man") else {
            throw XCTSkip("man-db is not installed (scripts/setup.sh --tests)")
        }
        dir = NSTemporaryDirectory() + "keychainfs-man-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if !dir.isEmpty { try? FileManager.default.removeItem(atPath: dir) }
        super.tearDown()
    }

    private func keychainfs(_ args: [String]) throws -> String {
        let r = try runProgram([CLIHarness.binary] + args)
        XCTAssertEqual(r.status, 0, "keychainfs \(args.joined(separator: " ")): \(r)")
        return r.stdoutText
    }

    /// The page as `man -l` shows it in the C locale, 200 columns wide.
    private func rendered(_ name: String, section: Int) throws -> String {
        let file = "\(dir)/\(name).\(section)"
        try Data(try keychainfs(["help", "--man", name]).utf8).write(to: URL(fileURLWithPath: file))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/man")
        p.arguments = ["-l", file]
        p.environment = ["PATH": "/usr/bin:/bin", "LC_ALL": "C", "MANWIDTH": "200", "HOME": dir, "TMPDIR": dir]  // man-db leaves mldbm-* files in $TMPDIR
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let text = out.fileHandleForReading.readDataToEndOfFile()
        let warnings = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, "man -l \(name).\(section): \(warnings)")
        XCTAssertEqual(warnings, "", "man -l \(name).\(section) renders without a warning")
        return String(decoding: text, as: UTF8.self)
    }

    private func words(_ text: some StringProtocol) -> String {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }).joined(separator: " ")
    }

    /// The command names `keychainfs help` lists.
    private func commands(_ overview: String) -> [String] {
        guard let start = overview.range(of: "Commands:\n") else { return [] }
        return overview[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { !$0.isEmpty }.compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    func testEveryPageRendersWithNameSynopsisAndDescription() throws {
        for (name, section) in Self.pages {
            let page = try rendered(name, section: section)
            XCTAssertTrue(page.hasPrefix("\(name.uppercased())(\(section))"), "\(name): \(page.prefix(200))")
            for heading in ["NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "ENVIRONMENT", "SEE ALSO"] {
                XCTAssertTrue(page.contains("\n\(heading)\n"), "\(name)(\(section)) has \(heading)")
            }
        }
        let r = try runProgram([CLIHarness.binary, "help", "--man", "keychainfs-nonesuch"])
        XCTAssertEqual(r.status, 2, "an unknown page is a usage error: \(r)")
    }

    func testKeychainfsPageSaysWhatHelpSaysForEveryCommand() throws {
        let page = words(try rendered("keychainfs", section: 1))
        let overview = try keychainfs(["help"])
        let names = commands(overview)
        XCTAssertGreaterThan(names.count, 30, "help lists the commands: \(overview)")
        for name in names {
            let help = try keychainfs(["help", name])
            XCTAssertTrue(help.hasPrefix("usage: keychainfs \(name)"), help)
            let body = words(help.dropFirst("usage: keychainfs ".count))
            XCTAssertTrue(page.contains(body), "keychainfs(1) says what `keychainfs help \(name)` says:\n\(body)")
        }
        // Exit statuses and the environment, as `keychainfs help` gives them.
        guard let exit = overview.range(of: "Exit status: "), let env = overview.range(of: "\nEnvironment:\n") else {
            return XCTFail("help has no exit statuses or environment: \(overview)")
        }
        XCTAssertTrue(page.contains("EXIT STATUS " + words(overview[exit.upperBound..<env.lowerBound])), page)
        let variables = overview[env.upperBound...].split(separator: "\n", omittingEmptySubsequences: false).prefix { !$0.isEmpty }
        var entry = ""
        for line in variables + [""] {
            if line.hasPrefix("    KEYCHAINFS_") || line.isEmpty {
                if !entry.isEmpty { XCTAssertTrue(page.contains(words(entry)), "keychainfs(1) ENVIRONMENT has: \(words(entry))") }
                entry = String(line)
            } else {
                entry += " " + line
            }
        }
        XCTAssertTrue(page.contains("KEYCHAINFS_VAULT"), page)
    }

    func testDaemonAndMountHelperPagesSayWhatHelpSays() throws {
        let daemon = words(try rendered("keychainfs-daemon", section: 8))
        let daemonHelp = try keychainfs(["help", "daemon"])
        XCTAssertTrue(daemon.contains("keychainfs-daemon " + words(daemonHelp.split(separator: "\n")[0].dropFirst("usage: keychainfs ".count))),
                      daemon)
        XCTAssertTrue(daemon.contains(words(daemonHelp.split(separator: "\n")[1])), daemon)
        XCTAssertTrue(daemon.contains("SIGUSR1"), daemon)

        let mount = words(try rendered("mount.fuse.keychainfs", section: 8))
        let mountHelp = try keychainfs(["help", "mount"])
        let body = words(mountHelp.split(separator: "\n", maxSplits: 1)[1])  // summary and details
        XCTAssertTrue(mount.contains(body), "mount.fuse.keychainfs(8) has `help mount`'s options:\n\(body)")
        XCTAssertTrue(mount.contains("fuse.keychainfs allow_other"), "the fstab line: \(mount)")
    }

    func testHelperPagesNameTheActionsTheHelpersTake() throws {
        for (name, section) in Self.pages where name.hasSuffix("credential-keychainfs") {
            let helper = name.hasPrefix("git") ? CredentialHelpers.git : CredentialHelpers.docker
            guard FileManager.default.isExecutableFile(atPath: helper) else { throw XCTSkip("\(name) is not built") }
            let usage = try runProgram([helper])  // no action: its usage line, and exit 1
            XCTAssertNotEqual(usage.status, 0, "\(usage)")
            let text = usage.stderr + usage.stdoutText
            guard let open = text.firstIndex(of: "<"), let close = text.firstIndex(of: ">") else {
                return XCTFail("\(name)'s usage names its actions: \(text)")
            }
            let actions = text[text.index(after: open)..<close]
            let page = words(try rendered(name, section: section))
            XCTAssertTrue(page.contains("SYNOPSIS") && page.contains("\(name) \(actions)"),
                          "\(name)(\(section))'s synopsis names \(actions): \(page)")
            for action in actions.split(separator: "|") {
                XCTAssertTrue(page.contains(" \(action) "), "\(name)(\(section)) describes \(action)")
            }
        }
    }
}
