import Foundation
import XCTest

/// The targets the thin binaries link, and the engine targets moved onto KeychainSystem, reach
/// the C library only through KeychainSystem.
final class ClientBoundaryTests: XCTestCase {
    static let clientTargets = ["KeychainCrypto", "KeychainModel", "KeychainProtocol", "KeychainClient", "KeychainCLI", "Security",
                                "KeychainCredentialHelpers", "keychainfs", "git-credential-keychainfs",
                                "docker-credential-keychainfs"]

    /// The vault, sync, access and TPM code; C libraries of their own (SQLite, libpq, the TSS)
    /// stay theirs.
    static let engineTargets = ["KeychainCore", "KeychainSync", "KeychainfsAccess", "KeychainTPM"]

    func testNoClientTargetImportsTheCLibrary() throws {
        let (files, offenders) = try filesAndOffenders(Self.clientTargets)
        XCTAssertGreaterThan(files, 50)
        XCTAssertEqual(offenders, [])
    }

    func testNoEngineTargetImportsTheCLibrary() throws {
        let (files, offenders) = try filesAndOffenders(Self.engineTargets)
        XCTAssertGreaterThan(files, 40)
        XCTAssertEqual(offenders, [])
    }

    /// keychainfs-daemon's verbs; `secret-service` still hardens the process through CProcess,
    /// as KeychainDaemon does.
    func testTheDaemonExecutableDoesNotImportGlibc() throws {
        let (files, offenders) = try filesAndOffenders(["keychainfs-daemon"], forbidden: ["import Glibc", "import Foundation"])
        XCTAssertGreaterThan(files, 5)
        XCTAssertEqual(offenders, [])
    }

    /// How many Swift files `targets` have, and their lines that import the C library.
    /// Foundation re-exports Glibc on Linux; CProcess is KeychainSystem's own.
    private func filesAndOffenders(_ targets: [String], forbidden: Set<String> = ["import Glibc", "import CProcess", "import Foundation"])
        throws -> (Int, [String]) {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        var offenders: [String] = []
        var files = 0
        for target in targets {
            let dir = sources.appendingPathComponent(target)
            let enumerator = try XCTUnwrap(FileManager.default.enumerator(atPath: dir.path))
            for case let name as String in enumerator where name.hasSuffix(".swift") {
                files += 1
                let text = try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
                for line in text.split(separator: "\n") where forbidden.contains(line.trimmingCharacters(in: .whitespaces)) {
                    offenders.append("\(target)/\(name): \(line)")
                }
            }
        }
        return (files, offenders)
    }
}
