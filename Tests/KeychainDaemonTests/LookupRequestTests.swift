import Foundation
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// The `lookup` request answers as the `copyMatching` of the query it stands for: the same
/// reply and the same audit lines, found or not, in a group the caller lacks, from an
/// outsider, from a locked vault, and for an item whose reads the approval program decides.
/// Each lookup is sent both ways, the general one by another process of the same user, so
/// that each has its own audit lines.
final class LookupRequestTests: XCTestCase {
    private var d: InProcessDaemon!
    private var typedCaller = InProcessDaemon.owner
    private var generalCaller = InProcessDaemon.owner

    override func setUpWithError() throws {
        d = try InProcessDaemon()
        typedCaller.pid = 70_001
        generalCaller.pid = 70_002
        try d.addPassword(service: "db", account: "app", secret: "s3cret")
        let internet: Attributes = [.class: "inet", .account: "admin", .securityDomain: "corp", .server: "db.example",
                                    .protocol: "htps", .authenticationType: "dflt", .port: .number(5432), .path: "/x"]
        XCTAssertEqual(try d.call(Request(.add, query: internet, secrets: [try SecureBytes(copying: Array("inet".utf8))])).status,
                       .success)
    }

    override func tearDown() { d?.stop() }

    private func describe(_ r: Response) -> String {
        func value(_ v: ReturnedValue) -> String {
            switch v {
            case .data(let s): return "data \(s.withUnsafeBytes { Array($0) })"
            case .persistentRef(let r): return "ref \(r)"
            case .item(let i):
                let attributes = i.attributes.sorted { $0.key < $1.key }.map { "\($0.key.rawValue)=\($0.value)" }
                return "item \(attributes) \(i.secret.map { s in s.withUnsafeBytes { Array($0) } } ?? []) \(i.persistentRef ?? [])"
            }
        }
        let result: String
        switch r.result {
        case .none: result = "none"
        case .value(let v): result = value(v)
        case .array(let a): result = "\(a.map(value))"
        }
        return "\(r.status) \(result) \(r.info)"
    }

    /// Sends `query` as a lookup and as copyMatching (each from its own process), checks that
    /// the replies are the same, and returns the reply.
    @discardableResult
    private func both(_ query: Attributes, as caller: CallerIdentity? = nil, file: StaticString = #filePath,
                      line: UInt = #line) throws -> Response {
        let lookup = try XCTUnwrap(ItemLookup(query: query), "a lookup's shape", file: file, line: line)
        var typed = caller ?? typedCaller, general = caller ?? generalCaller
        typed.pid = typedCaller.pid
        general.pid = generalCaller.pid
        let viaLookup = try d.call(lookup.request, as: typed)
        let viaSearch = try d.call(Request(.copyMatching, query: query), as: general)
        XCTAssertEqual(describe(viaLookup), describe(viaSearch), "\(query)", file: file, line: line)
        return viaLookup
    }

    /// The audit lines of one process, without what differs between two processes' lines of
    /// the same events: the sequence number, the time, the pid and the chain's hash.
    private func auditLines(of caller: CallerIdentity) throws -> [String] {
        try d.daemon.auditLog?.flushRepeats()
        let log = try String(contentsOfFile: d.vaultPath + ".audit", encoding: .utf8)
        let pid = String(caller.pid)
        var lines: [String] = []
        for line in log.split(separator: "\n") {
            let fields: [String] = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count > 5, fields[3] == pid else { continue }
            let kept: [String] = [fields[2]] + Array(fields[4..<(fields.count - 1)])
            lines.append(kept.joined(separator: "\t"))
        }
        return lines
    }

    private func checkAuditLinesAgree(file: StaticString = #filePath, line: UInt = #line) throws {
        let typed = try auditLines(of: typedCaller), general = try auditLines(of: generalCaller)
        XCTAssertEqual(typed, general, file: file, line: line)
    }

    private let read: Attributes = [.class: "genp", .service: "db", .account: "app", .returnData: true]

    func testFoundItemsAndTheirReadsAreAnsweredAndAuditedAlike() throws {
        XCTAssertEqual(secretText(try both(read)), "s3cret")
        XCTAssertEqual(secretText(try both(read)), "s3cret", "a repeated read: counted, not a line of its own")
        XCTAssertEqual(secretText(try both(read.merging([.matchLimit: .matchLimitOne, .useDataProtectionKeychain: .bool(false)]) { a, _ in a })),
                       "s3cret", "Apple's usual query: kSecMatchLimitOne, kSecUseDataProtectionKeychain")
        XCTAssertEqual(try both(read.merging([.returnAttributes: true, .returnPersistentRef: true]) { a, _ in a }).status, .success)
        XCTAssertEqual(try both([.class: "genp", .service: "db", .account: "app", .returnAttributes: true]).status, .success)
        guard case .none = try both([.class: "genp", .service: "db", .account: "app", .returnData: false]).result else {
            return XCTFail("a lookup that returns nothing")
        }
        XCTAssertEqual(secretText(try both([.class: "inet", .account: "admin", .securityDomain: "corp", .server: "db.example",
                                            .protocol: "htps", .authenticationType: "dflt", .port: .number(5432), .path: "/x",
                                            .returnData: true])), "inet")
        let lines = try auditLines(of: typedCaller)
        XCTAssertFalse(lines.filter { $0.contains("\tread\t") }.isEmpty, "\(lines)")
        try checkAuditLinesAgree()
    }

    func testErrorsAreAnsweredAndAuditedAlike() throws {
        XCTAssertEqual(try both(read.merging([.account: "nobody"]) { _, b in b }).status, .itemNotFound)
        XCTAssertEqual(try both(read.merging([.accessGroup: "no-such-group"]) { _, b in b }).status, .missingEntitlement)
        XCTAssertEqual(try both(read.merging([.account: .date(1)]) { _, b in b }).status, .param)
        XCTAssertEqual(try both(read, as: InProcessDaemon.outsider).status, .itemNotFound, "an outsider sees nothing")
        let denied = try auditLines(of: typedCaller).filter { $0.contains("\tdenied\t") }
        XCTAssertEqual(denied.count, 1, "the group refused, audited as copyMatching")
        XCTAssertTrue(denied.allSatisfy { $0.contains("copyMatching") }, "\(denied)")
        try checkAuditLinesAgree()
    }

    func testALockedVaultIsAnsweredAlike() throws {
        d.daemon.vault.lock()
        XCTAssertEqual(try both(read).status, .interactionNotAllowed)
        XCTAssertEqual(try both(read.merging([.account: "nobody"]) { _, b in b }).status, .itemNotFound, "nothing to unlock")
        try checkAuditLinesAgree()
    }

    func testPresenceIsAskedOfTheApprovalProgramAlike() throws {
        let marker = d.dir + "/asked", program = d.dir + "/approve.sh"
        try "#!/bin/sh\necho \"$@\" >> '\(marker)'\nexit 0\n".write(toFile: program, atomically: true, encoding: .utf8)
        chmod(program, 0o755)
        try d.daemon.vault.setSetting("approval-program", Array(program.utf8))
        let gated: Attributes = [.class: "genp", .service: "db", .account: "gated",
                                 .accessControl: AccessControl(protection: .afterFirstUnlock, flags: AccessControl.userPresence).value]
        XCTAssertEqual(try d.call(Request(.add, query: gated, secrets: [try SecureBytes(copying: Array("gated".utf8))])).status, .success)
        XCTAssertEqual(secretText(try both([.class: "genp", .service: "db", .account: "gated", .returnData: true])), "gated")
        let asked = ((try? String(contentsOfFile: marker, encoding: .utf8)) ?? "").split(separator: "\n")
        XCTAssertEqual(asked.count, 2, "the program asked once for each: \(asked)")

        try "#!/bin/sh\nexit 1\n".write(toFile: program, atomically: true, encoding: .utf8)
        let refused = try both([.class: "genp", .service: "db", .account: "gated", .returnData: true])
        XCTAssertNotEqual(refused.status, .success)
        try checkAuditLinesAgree()
    }
}
