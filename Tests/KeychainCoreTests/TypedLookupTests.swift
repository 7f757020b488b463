import KeychainCore
import KeychainCrypto
import XCTest

/// `Vault.copyMatching(_:primaryKey:...)`, the search of the daemon's `lookup` request, made
/// without a query dictionary: for every lookup it gives what `copyMatching` of the same query
/// gives, the result, the secrets it records as returned, and the status.
final class TypedLookupTests: XCTestCase {
    var scratch: Scratch!
    var vault: Vault!

    override func setUpWithError() throws {
        scratch = try Scratch()
        vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "app", secret: "s3cret")
        try vault.addPassword(service: "db", account: "shared", secret: "in a group", ["agrp": "app.shared"])
        try vault.addPassword(service: "db", account: "synced", secret: "synchronizable", ["sync": true])
        try vault.addPassword(service: "db", account: "gated", secret: "presence",
                              [.accessControl: AccessControl(protection: .afterFirstUnlock, flags: AccessControl.userPresence).value])
        try vault.add(["class": "inet", "srvr": "db.example", "acct": "admin", "ptcl": "htps", "port": 5432, "path": "/x",
                       "sdmn": "corp", "atyp": "dflt"], secret: secret("full inet"), accessGroups: groups)
        try vault.add(["class": "inet", "srvr": "db.example", "acct": "guest"], secret: secret("sparse inet"), accessGroups: groups)
    }

    override func tearDown() {
        vault = nil
        scratch = nil
    }

    private func describe(_ v: ReturnedValue) -> String {
        switch v {
        case .data(let d): return "data \(d.string)"
        case .persistentRef(let r): return "ref \(r)"
        case .item(let i):
            let attributes = i.attributes.sorted { $0.key < $1.key }.map { "\($0.key.rawValue)=\($0.value)" }
            return "item \(attributes) \(i.secret?.string ?? "-") \(i.persistentRef ?? [])"
        }
    }

    private func outcome(_ body: (inout [PersistentRef]) throws -> QueryResult) -> String {
        var read: [PersistentRef] = []
        do {
            let text: String
            switch try body(&read) {
            case .none: text = "none"
            case .value(let v): text = describe(v)
            case .array(let a): text = "\(a.map(describe))"
            }
            return text + " read \(read.map(\.bytes))"
        } catch {
            return "status \(error)"
        }
    }

    /// The lookup's outcome, checked against its query's; returned for the test's own checks.
    @discardableResult
    private func lookUp(_ primaryKey: [AttributeValue], in itemClass: ItemClass = .genericPassword, group: String? = nil,
                        data: Bool = true, attributes: Bool = false, ref: Bool = false, groups callerGroups: [String] = groups,
                        file: StaticString = #filePath, line: UInt = #line) -> String {
        var query: Attributes = [.class: .string(itemClass.rawValue)]
        for (name, value) in zip(itemClass.primaryKey, primaryKey) { query[name] = value }
        if let group { query[.accessGroup] = .string(group) }
        if data { query[.returnData] = true }
        if attributes { query[.returnAttributes] = true }
        if ref { query[.returnPersistentRef] = true }
        let general = outcome { try vault.copyMatching(query, accessGroups: callerGroups, secretsReturned: &$0) }
        let typed = outcome {
            try vault.copyMatching(itemClass, primaryKey: primaryKey, accessGroup: group, returnData: data, returnAttributes: attributes,
                                   returnPersistentRef: ref, accessGroups: callerGroups, secretsReturned: &$0)
        }
        XCTAssertEqual(typed, general, "\(query)", file: file, line: line)
        return typed
    }

    func testLookupsFindWhatTheirQueriesFind() {
        XCTAssertTrue(lookUp(["app", "db"]).hasPrefix("data s3cret read [["))
        XCTAssertTrue(lookUp(["app", .data(Array("db".utf8))]).hasPrefix("data s3cret"), "a string and its bytes are one value")
        XCTAssertTrue(lookUp(["app", "db"], data: true, attributes: true, ref: true).hasPrefix("item ["))
        XCTAssertTrue(lookUp(["app", "db"], data: false, attributes: true).hasSuffix("read []"), "no secret, none recorded")
        XCTAssertTrue(lookUp(["app", "db"], data: false, ref: true).hasPrefix("ref "))
        XCTAssertEqual(lookUp(["app", "db"], data: false), "none read []")
        XCTAssertTrue(lookUp(["shared", "db"]).hasPrefix("data in a group"))
        XCTAssertTrue(lookUp(["shared", "db"], group: "app.shared").hasPrefix("data in a group"))
        XCTAssertTrue(lookUp(["admin", "corp", "db.example", "htps", "dflt", "5432", "/x"], in: .internetPassword).hasPrefix("data full inet"))
        XCTAssertTrue(lookUp(["guest", "", "db.example", 0, "", 0, .data([])], in: .internetPassword).hasPrefix("data sparse inet"))
        XCTAssertTrue(lookUp(["gated", "db"], data: false, attributes: true).hasPrefix("item ["))
    }

    func testLookupsFailAsTheirQueriesFail() throws {
        XCTAssertEqual(lookUp(["nobody", "db"]), "status \(KeychainStatus.itemNotFound)")
        XCTAssertEqual(lookUp(["synced", "db"]), "status \(KeychainStatus.itemNotFound)", "a lookup sees sync 0 only")
        XCTAssertEqual(lookUp(["app", "db"], group: "elsewhere"), "status \(KeychainStatus.missingEntitlement)")
        XCTAssertEqual(lookUp(["app", "db"], group: "app.shared"), "status \(KeychainStatus.itemNotFound)")
        XCTAssertEqual(lookUp(["app", "db"], groups: []), "status \(KeychainStatus.itemNotFound)")
        XCTAssertEqual(lookUp(["app", "db"], groups: ["app.shared"]), "status \(KeychainStatus.itemNotFound)")
        XCTAssertEqual(lookUp(["app", .date(1)]), "status \(KeychainStatus.param)")
        XCTAssertEqual(lookUp(["admin", "corp", "db.example", "htps", "dflt", .date(1), "/x"], in: .internetPassword),
                       "status \(KeychainStatus.param)")
        XCTAssertEqual(lookUp(["gated", "db"]), "status \(KeychainStatus.interactionNotAllowed)", "presence is the daemon's to ask")
        vault.lock()
        XCTAssertEqual(lookUp(["app", "db"]), "status \(KeychainStatus.interactionNotAllowed)")
        XCTAssertEqual(lookUp(["nobody", "db"]), "status \(KeychainStatus.itemNotFound)")
    }
}
