@testable import KeychainCore
import KeychainCrypto
import XCTest

/// The file interface's changes (Vault+FileChanges): each is one transaction, and one that
/// fails changes nothing.
final class FileChangeTests: XCTestCase {
    var scratch: Scratch!
    var vault: Vault!

    override func setUpWithError() throws {
        scratch = try Scratch()
        vault = try scratch.makeVault()
    }

    override func tearDown() {
        vault = nil
        scratch = nil
    }

    func name(_ s: String, _ a: String) -> ItemName { ItemName(service: Array(s.utf8), account: Array(a.utf8)) }

    func entry(_ s: String, _ a: String, groups g: [String] = groups) throws -> FileEntry? {
        try vault.fileEntries(service: Array(s.utf8), account: Array(a.utf8), accessGroups: g).first
    }

    func label(_ s: String, _ a: String) throws -> String? { try entry(s, a)?.attributes["labl"]?.stringValue }

    func count() throws -> Int { try vault.info().itemCount }

    func testStoreSecretByReferenceKeepsAttributesAndIsRefusedOutsideTheGroups() throws {
        try vault.addPassword(service: "db", account: "app", secret: "old", ["labl": "kept"])
        let e = try XCTUnwrap(entry("db", "app"))
        let change = try vault.storeFileSecret(secret("new"), in: e.ref, accessGroups: groups)
        XCTAssertEqual(change.entry.ref, e.ref)
        XCTAssertEqual(change.entry.version, e.version + 1)
        XCTAssertEqual(change.entry.size, 3)
        XCTAssertEqual(change.groups, ["app.default"])
        XCTAssertEqual(try vault.password(service: "db", account: "app"), "new")
        XCTAssertEqual(try label("db", "app"), "kept")
        XCTAssertStatus(.itemNotFound, try vault.storeFileSecret(secret("other"), in: e.ref, accessGroups: ["app.shared"]))
        XCTAssertEqual(try vault.password(service: "db", account: "app"), "new")
        vault.lock()
        XCTAssertStatus(.interactionNotAllowed, try vault.storeFileSecret(secret("x"), in: e.ref, accessGroups: groups))
    }

    func testStoreSecretByNameCreatesOnceThenReplaces() throws {
        let first = try vault.storeFileSecret(secret("one"), named: name("new", "file"), accessGroups: ["app.shared", "app.default"])
        XCTAssertTrue(first.created)
        XCTAssertEqual(first.entry.group, "app.shared", "a new item lands in the first group")
        let second = try vault.storeFileSecret(secret("two"), named: name("new", "file"), accessGroups: groups)
        XCTAssertFalse(second.created)
        XCTAssertEqual(second.entry.ref, first.entry.ref)
        XCTAssertEqual(try count(), 1)
        XCTAssertEqual(try vault.password(service: "new", account: "file"), "two")
    }

    func testCreateReturnsTheNewEntryAndRefusesADuplicate() throws {
        let made = try vault.createFile(name("svc", "acct"), secret: secret("first"), accessGroups: groups)
        XCTAssertTrue(made.created)
        XCTAssertEqual(made.entry.size, 5)
        XCTAssertEqual(String(decoding: made.entry.account, as: UTF8.self), "acct")
        XCTAssertEqual(try vault.fileSecret(of: made.entry.ref, accessGroups: groups).string, "first")
        XCTAssertStatus(.duplicateItem, try vault.createFile(name("svc", "acct"), secret: secret("second"), accessGroups: groups))
        XCTAssertStatus(.missingEntitlement, try vault.createFile(name("svc", "other"), secret: secret("x"), accessGroups: []))
        XCTAssertEqual(try count(), 1)
        XCTAssertEqual(try vault.password(service: "svc", account: "acct"), "first")
    }

    func testRenameMovesTheItemAndNoReplaceRefusesATakenName() throws {
        try vault.addPassword(service: "svc", account: "a", secret: "secret-a", ["labl": "label a"])
        try vault.addPassword(service: "svc", account: "b", secret: "secret-b")
        let a = try XCTUnwrap(entry("svc", "a"))
        let moved = try vault.renameFile(a.ref, to: name("other", "c"), replacing: false, accessGroups: groups)
        XCTAssertEqual(moved.entry.ref, a.ref)
        XCTAssertNil(moved.replaced)
        XCTAssertNil(try entry("svc", "a"))
        XCTAssertEqual(try vault.password(service: "other", account: "c"), "secret-a")
        XCTAssertEqual(try label("other", "c"), "label a")
        XCTAssertStatus(.duplicateItem, try vault.renameFile(a.ref, to: name("svc", "b"), replacing: false, accessGroups: groups))
        XCTAssertEqual(try vault.password(service: "other", account: "c"), "secret-a")
        XCTAssertEqual(try vault.password(service: "svc", account: "b"), "secret-b")
        XCTAssertEqual(try count(), 2)
    }

    func testRenameOverKeepsTheTargetsAttributesAndDeletesTheSource() throws {
        try vault.addPassword(service: "app", account: "config", secret: "version one", ["labl": "Config", "icmt": "c"])
        try vault.addPassword(service: "app", account: ".config.swp", secret: "version two")
        let target = try XCTUnwrap(entry("app", "config")), swap = try XCTUnwrap(entry("app", ".config.swp"))
        let change = try vault.renameFile(swap.ref, to: name("app", "config"), replacing: true, accessGroups: groups)
        XCTAssertEqual(change.replaced, target.ref)
        XCTAssertEqual(change.entry.ref, target.ref)
        XCTAssertEqual(change.entry.version, target.version + 1)
        XCTAssertEqual(try vault.password(service: "app", account: "config"), "version two")
        XCTAssertEqual(try label("app", "config"), "Config")
        XCTAssertEqual(try entry("app", "config")?.attributes["icmt"]?.stringValue, "c")
        XCTAssertNil(try entry("app", ".config.swp"))
        XCTAssertEqual(try count(), 1)
        XCTAssertStatus(.itemNotFound, try vault.fileSecret(of: swap.ref, accessGroups: groups))
    }

    func testARenameOverThatFailsHalfwayChangesNothing() throws {
        // The target is visible to the caller but in a group it cannot change.
        try vault.addPassword(service: "app", account: "config", secret: "theirs", ["agrp": "app.shared"])
        try vault.addPassword(service: "app", account: "swp", secret: "mine")
        let swap = try XCTUnwrap(entry("app", "swp"))
        XCTAssertStatus(.missingEntitlement, try vault.renameFile(swap.ref, to: name("app", "config"), replacing: true,
                                                                  accessGroups: ["app.default"], visibleGroups: groups))
        XCTAssertEqual(try vault.password(service: "app", account: "config"), "theirs")
        XCTAssertEqual(try vault.password(service: "app", account: "swp"), "mine")
        // A gated source would lose its gate in an ungated target.
        try vault.add(["class": "genp", "svce": "app", "acct": "gated", "accc": "ak;1"], secret: secret("g"), accessGroups: groups)
        let gated = try XCTUnwrap(entry("app", "gated"))
        XCTAssertStatus(.interactionNotAllowed, try vault.renameFile(gated.ref, to: name("app", "swp"), replacing: true,
                                                                     accessGroups: groups))
        XCTAssertEqual(try vault.password(service: "app", account: "swp"), "mine")
        XCTAssertNotNil(try entry("app", "gated"))
        // Locked: the WhenUnlocked target is out of sight, so the AfterFirstUnlock source's
        // rewrite collides with it in the store and the transaction rolls back.
        try vault.addPassword(service: "app", account: "early", secret: "ck item", ["pdmn": "ck"])
        let early = try XCTUnwrap(entry("app", "early"))
        vault.lock()
        XCTAssertStatus(.duplicateItem, try vault.renameFile(early.ref, to: name("app", "swp"), replacing: true, accessGroups: groups))
        try vault.unlock(passphrase: secret("correct horse"))
        XCTAssertEqual(try vault.password(service: "app", account: "early"), "ck item")
        XCTAssertEqual(try vault.password(service: "app", account: "swp"), "mine")
        XCTAssertEqual(try count(), 4)
    }

    func testTruncateCutsAndExtendsInOneStep() throws {
        try vault.addPassword(service: "svc", account: "acct", secret: "abcdefgh", ["labl": "kept"])
        let e = try XCTUnwrap(entry("svc", "acct"))
        XCTAssertEqual(try vault.truncateFile(e.ref, to: 3, accessGroups: groups).entry.size, 3)
        XCTAssertEqual(try vault.password(service: "svc", account: "acct"), "abc")
        _ = try vault.truncateFile(e.ref, to: 5, accessGroups: groups)
        XCTAssertEqual(try vault.fileSecret(of: e.ref, accessGroups: groups).withUnsafeBytes { Array($0) }, [0x61, 0x62, 0x63, 0, 0])
        _ = try vault.truncateFile(e.ref, to: 0, accessGroups: groups)
        XCTAssertEqual(try vault.password(service: "svc", account: "acct"), "")
        XCTAssertEqual(try label("svc", "acct"), "kept")
        XCTAssertStatus(.param, try vault.truncateFile(e.ref, to: ItemLimits.maximumSecretLength + 1, accessGroups: groups))
        XCTAssertStatus(.itemNotFound, try vault.truncateFile(e.ref, to: 1, accessGroups: ["app.shared"]))
        XCTAssertEqual(try entry("svc", "acct")?.version, e.version + 3)
    }

    func testDeleteRemovesTheNamedItemOnly() throws {
        try vault.addPassword(service: "svc", account: "doomed", secret: "x")
        try vault.addPassword(service: "svc", account: "stays", secret: "y")
        XCTAssertStatus(.itemNotFound, try vault.deleteFile(name("svc", "doomed"), accessGroups: ["app.shared"]))
        XCTAssertEqual(try vault.deleteFile(name("svc", "doomed"), accessGroups: groups), ["app.default"])
        XCTAssertNil(try entry("svc", "doomed"))
        XCTAssertEqual(try vault.password(service: "svc", account: "stays"), "y")
    }
}
