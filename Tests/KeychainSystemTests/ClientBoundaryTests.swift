import Foundation
import XCTest

/// The targets the thin binaries link, and the engine targets moved onto KeychainSystem, reach
/// the C library only through KeychainSystem.
final class ClientBoundaryTests: XCTestCase {
    static let clientTargets = ["KeychainCrypto", "KeychainModel", "KeychainProtocol", "KeychainClient", "KeychainCLI", "Security",
                                "KeychainCredentialHelpers", "KeychainAgent", "KeychainSSHAgent", "keychainfs",
                                "git-credential-keychainfs", "docker-credential-keychainfs"]

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

    /// KeychainfsAccess is the access model alone: it declares KeychainModel and nothing else,
    /// and imports nothing else (SwiftPM lets a target import a module it does not declare).
    func testTheAccessModelDependsOnKeychainModelAlone() throws {
        let graph = try Self.declaredDependencies()
        XCTAssertEqual(graph["KeychainfsAccess"], ["KeychainModel"])
        let imports = try Self.imports(of: ["KeychainfsAccess"])
        XCTAssertFalse(imports.isEmpty, "its sources are read")
        XCTAssertEqual(imports.filter { !["KeychainModel", "Synchronization"].contains($0.module) }.map(\.line), [])
    }

    /// The Secret Service is a client of the daemon: neither the engine nor SQLite is among the
    /// targets it reaches, directly or through another, nor imported by a source of any of them.
    func testTheSecretServiceReachesNeitherTheEngineNorSQLite() throws {
        let graph = try Self.declaredDependencies()
        let reached = Self.reached(from: "KeychainSecretService", in: graph)
        XCTAssertTrue(reached.isSuperset(of: ["CSystemd", "KeychainClient", "KeychainfsAccess", "KeychainModel"]), "\(reached)")
        let engine: Set<String> = ["KeychainCore", "SQLiteStore", "CSQLite"]
        XCTAssertEqual(reached.intersection(engine), [])
        let imports = try Self.imports(of: reached.union(["KeychainSecretService"]).sorted())
        XCTAssertGreaterThan(imports.count, 50)
        XCTAssertEqual(imports.filter { engine.contains($0.module) }.map(\.line), [])
    }

    /// The SSH agent is a client of the daemon inside the thin `keychainfs`: it reaches neither
    /// the engine, SQLite nor libcrypto (the daemon signs), and its protocol codec depends on nothing.
    func testTheSSHAgentReachesNeitherTheEngineNorLibcrypto() throws {
        let graph = try Self.declaredDependencies()
        XCTAssertEqual(graph["KeychainSSHAgent"], [])
        let reached = Self.reached(from: "KeychainAgent", in: graph)
        XCTAssertTrue(reached.isSuperset(of: ["KeychainSSHAgent", "KeychainClient"]), "\(reached)")
        XCTAssertEqual(reached.intersection(["KeychainCore", "SQLiteStore", "CSQLite", "KeychainKeys", "COpenSSL"]), [])
    }

    /// `import CommonCrypto` is Swift over KeychainKeys' wrappers: it declares KeychainKeys alone
    /// and imports nothing else, so libcrypto stays behind the one target that imports COpenSSL.
    func testCommonCryptoReachesLibcryptoOnlyThroughKeychainKeys() throws {
        let graph = try Self.declaredDependencies()
        XCTAssertEqual(graph["CommonCrypto"], ["KeychainKeys"])
        let imports = try Self.imports(of: ["CommonCrypto"])
        XCTAssertFalse(imports.isEmpty, "its sources are read")
        XCTAssertEqual(imports.filter { $0.module != "KeychainKeys" }.map(\.line), [])
    }

    /// Checks the reading of Package.swift that the tests above rely on.
    func testPackageDependenciesAreReadWhole() throws {
        let graph = try Self.declaredDependencies()
        XCTAssertEqual(graph["KeychainCore"].map(Set.init), ["KeychainCrypto", "KeychainModel", "KeychainSystem", "SQLiteStore"])
        XCTAssertEqual(graph["CSQLite"], [], "a system library")
        XCTAssertTrue(Self.reached(from: "KeychainDaemon", in: graph).isSuperset(of: ["KeychainCore", "SQLiteStore", "CSQLite"]))
        XCTAssertGreaterThan(graph.count, 40)
    }

    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// Every target of Package.swift and the targets it names as dependencies. Fails, rather than
    /// read a list partly, when a dependency is anything but a target's name in quotes.
    static func declaredDependencies() throws -> [String: [String]] {
        let text = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let target = try NSRegularExpression(pattern: #"\.(?:target|executableTarget|testTarget|systemLibrary)\(\s*name:\s*"([^"]+)"(?:,\s*dependencies:\s*\[([^\]]*)\])?"#)
        let quoted = try NSRegularExpression(pattern: #""([^"]*)""#)
        var graph: [String: [String]] = [:]
        let whole = NSRange(text.startIndex..., in: text)
        for match in target.matches(in: text, range: whole) {
            let name = String(text[Range(match.range(at: 1), in: text)!])
            guard let listRange = Range(match.range(at: 2), in: text) else {
                graph[name] = []
                continue
            }
            let list = String(text[listRange])
            let listWhole = NSRange(list.startIndex..., in: list)
            let names = quoted.matches(in: list, range: listWhole).map { String(list[Range($0.range(at: 1), in: list)!]) }
            let rest = quoted.stringByReplacingMatches(in: list, range: listWhole, withTemplate: "")
            guard rest.allSatisfy({ $0 == "," || $0.isWhitespace }) else {
                throw NSError(domain: "ClientBoundaryTests", code: 1,
                              userInfo: [NSLocalizedDescriptionKey: "\(name): a dependency that is not a quoted name: \(list)"])
            }
            graph[name] = names
        }
        return graph
    }

    /// `target` and every target its dependencies reach.
    static func reached(from target: String, in graph: [String: [String]]) -> Set<String> {
        var seen: Set<String> = []
        var next = graph[target] ?? []
        while let t = next.popLast() {
            if seen.insert(t).inserted { next += graph[t] ?? [] }
        }
        return seen
    }

    /// The modules the Swift files of `targets` import (`import M`, `@testable import M`,
    /// `import struct M.T`), each with its line.
    static func imports(of targets: [String]) throws -> [(module: String, line: String)] {
        var found: [(String, String)] = []
        for target in targets {
            let dir = root.appendingPathComponent("Sources").appendingPathComponent(target)
            guard let enumerator = FileManager.default.enumerator(atPath: dir.path) else { continue }
            for case let name as String in enumerator where name.hasSuffix(".swift") {
                let text = try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
                for line in text.split(separator: "\n") {
                    let words = line.split(separator: " ").filter { !$0.hasPrefix("@") }
                    guard words.first == "import", words.count >= 2 else { continue }
                    let kinds: Set<Substring> = ["struct", "class", "enum", "protocol", "typealias", "func", "var", "let"]
                    let path = words.count >= 3 && kinds.contains(words[1]) ? words[2] : words[1]
                    found.append((String(path.split(separator: ".")[0]), "\(target)/\(name): \(line)"))
                }
            }
        }
        return found
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
