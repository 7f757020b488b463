@testable import KeychainCore
import Foundation
import KeychainCrypto
import KeychainTestSupport
import SQLiteStore
import XCTest

/// Searches run on read-only connections of their own, beside writes and beside each other,
/// without the vault's mutex (`Vault.withReader`); a lock waits for the searches in flight and
/// every later one finds the keys gone (`KeyRing`). Real vault files, real threads.
final class ParallelReadTests: XCTestCase {
    var scratch: Scratch!
    override func setUpWithError() throws { scratch = try Scratch() }
    override func tearDown() { scratch = nil }

    /// What a search gave, comparable: each item's attributes and secret, or the status.
    enum Outcome: Equatable {
        case items([Attributes], [[UInt8]?])
        case status(KeychainStatus)
    }

    func outcome(_ vault: Vault, _ query: Attributes, groups: [String] = groups) -> Outcome {
        do {
            let r = try vault.copyMatching(query, accessGroups: groups)
            let values: [ReturnedValue]
            switch r {
            case .none: values = []
            case .value(let v): values = [v]
            case .array(let a): values = a
            }
            return .items(values.map { $0.item?.attributes ?? [:] },
                          values.map { ($0.item?.secret ?? $0.data)?.withUnsafeBytes { Array($0) } })
        } catch {
            return .status(error as? KeychainStatus ?? .internalComponent)
        }
    }

    func testSearchesRunWhileTheMutexIsHeld() throws {
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "app", secret: "hunter2")
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            vault.mutex.withLock {
                held.signal()
                release.wait()
            }
        }
        held.wait()
        defer { release.signal() }
        XCTAssertEqual(try vault.password(service: "db", account: "app"), "hunter2", "a search needs no write lock")
        XCTAssertEqual(try vault.fileEntries(service: Array("db".utf8), accessGroups: groups).count, 1)
        XCTAssertEqual(vault.lockState, .unlocked)
    }

    /// Readers in threads, one thread writing (updates, deletes, adds) and one locking and
    /// unlocking: every secret found is one that item had, every status one the moment allows.
    func testFindsBesideWritesLocksAndUnlocks() throws { try findsBesideWritesLocksAndUnlocks(keepingSnapshots: false) }
    /// The same with readers that keep their read transaction from one search to the next
    /// until a commit (`Vault.keepsReadSnapshots`, as the daemon runs its vault).
    func testFindsBesideWritesLocksAndUnlocksKeepingSnapshots() throws { try findsBesideWritesLocksAndUnlocks(keepingSnapshots: true) }

    private func findsBesideWritesLocksAndUnlocks(keepingSnapshots: Bool) throws {
        let vault = try scratch.makeVault()
        vault.keepsReadSnapshots = keepingSnapshots
        let stable = 100, churn = 10
        try vault.addAll((0..<stable).map { i in
            (["class": "genp", "svce": "stable", "acct": .string("a\(i)")], try secret("stable \(i)"))
        }, accessGroups: groups)
        try vault.addAll((0..<stable).map { i in
            (["class": "genp", "svce": "early", "acct": .string("a\(i)"), "pdmn": "ck"], try secret("early \(i)"))
        }, accessGroups: groups)
        for j in 0..<churn {
            try vault.addPassword(service: "churn", account: "c\(j)", secret: "churn \(j) v0", ["pdmn": "ck"])
        }
        let deadline = Date().addingTimeInterval(2)
        final class Tally: @unchecked Sendable {
            let lock = NSLock()
            var found = 0, locked = 0, gone = 0, problems: [String] = []
            func add(_ f: (Tally) -> Void) { lock.lock(); f(self); lock.unlock() }
        }
        let tally = Tally()
        let readers = 4
        concurrently(readers + 2) { t in
            var rng = SystemRandomNumberGenerator()
            if t == readers {  // the writer
                var version = 0
                while Date() < deadline {
                    version += 1
                    let j = Int.random(in: 0..<churn, using: &rng)
                    do {
                        switch version % 3 {
                        case 0:
                            try vault.delete(["class": "genp", "svce": "churn", "acct": .string("c\(j)")], accessGroups: groups)
                        case 1:
                            try vault.addPassword(service: "churn", account: "c\(j)", secret: "churn \(j) v\(version)", ["pdmn": "ck"])
                        default:
                            try vault.update(["class": "genp", "svce": "churn", "acct": .string("c\(j)")], changes: [:],
                                             secret: secret("churn \(j) v\(version)"), accessGroups: groups)
                        }
                    } catch KeychainStatus.itemNotFound {
                    } catch KeychainStatus.duplicateItem {
                    } catch {
                        tally.add { $0.problems.append("write: \(error)") }
                    }
                }
                return
            }
            if t == readers + 1 {  // the locker
                while Date() < deadline {
                    vault.lock()
                    usleep(3000)
                    do { try vault.unlock(passphrase: secret("correct horse")) } catch {
                        tally.add { $0.problems.append("unlock: \(error)") }
                    }
                    usleep(3000)
                }
                return
            }
            while Date() < deadline {
                let i = Int.random(in: 0..<stable, using: &rng)
                let j = Int.random(in: 0..<churn, using: &rng)
                for (service, account, expected, mayBeLocked, mayBeGone) in [
                    ("stable", "a\(i)", "stable \(i)", true, false),
                    ("early", "a\(i)", "early \(i)", false, false),
                    ("churn", "c\(j)", "churn \(j) v", false, true),
                ] {
                    do {
                        let got = try vault.password(service: service, account: account)
                        let right = service == "churn" ? got.hasPrefix(expected) : got == expected
                        tally.add { right ? ($0.found += 1) : $0.problems.append("\(service)/\(account): wrong secret") }
                    } catch KeychainStatus.interactionNotAllowed where mayBeLocked {
                        tally.add { $0.locked += 1 }
                    } catch KeychainStatus.itemNotFound where mayBeGone {
                        tally.add { $0.gone += 1 }
                    } catch {
                        tally.add { $0.problems.append("\(service)/\(account): \(error)") }
                    }
                }
                // A listing on a reader, beside the rest.
                if i % 16 == 0 {
                    do {
                        try vault.forEachFileEntry(service: Array("churn".utf8), accessGroups: groups) { e in
                            if !e.account.starts(with: Array("c".utf8)) { tally.add { $0.problems.append("listing") } }
                            return true
                        }
                    } catch {
                        tally.add { $0.problems.append("listing: \(error)") }
                    }
                }
            }
        }
        XCTAssertEqual(tally.problems, [])
        XCTAssertGreaterThan(tally.found, 100)
        XCTAssertGreaterThan(tally.locked, 0, "some finds met the vault locked")
        // After it all, unlocked, every item reads exactly.
        try vault.unlock(passphrase: secret("correct horse"))
        for i in 0..<stable { XCTAssertEqual(try vault.password(service: "stable", account: "a\(i)"), "stable \(i)") }
    }

    func testAFindAfterALockIsInteractionNotAllowedOnEveryThread() throws {
        let vault = try scratch.makeVault()
        try vault.addPassword(service: "db", account: "ak", secret: "when unlocked")
        try vault.addPassword(service: "db", account: "ck", secret: "after first unlock", ["pdmn": "ck"])
        // Warm readers on several threads, so each later search may meet one opened before the lock.
        concurrently(6) { _ in for _ in 0..<50 { _ = try? vault.password(service: "db", account: "ak") } }
        vault.lock()
        final class Results: @unchecked Sendable {
            let lock = NSLock()
            var statuses: [String] = []
            func add(_ s: String) { lock.lock(); statuses.append(s); lock.unlock() }
        }
        let results = Results()
        concurrently(6) { _ in
            for _ in 0..<20 {
                do {
                    _ = try vault.password(service: "db", account: "ak")
                    results.add("found")
                } catch {
                    results.add("\(error as? KeychainStatus ?? .internalComponent)")
                }
                if (try? vault.password(service: "db", account: "ck")) != "after first unlock" { results.add("ck unreadable") }
            }
        }
        XCTAssertEqual(Set(results.statuses), ["\(KeychainStatus.interactionNotAllowed)"])
        XCTAssertEqual(results.statuses.count, 120)
        try vault.unlock(passphrase: secret("correct horse"))
        XCTAssertEqual(try vault.password(service: "db", account: "ak"), "when unlocked")
    }

    /// A thread that writes and then searches sees what it wrote, however the readers it meets
    /// were last used.
    func testAReadAfterAWriteOnTheSameThreadSeesTheWrite() throws { try readAfterWriteOnTheSameThread(keepingSnapshots: false) }
    /// The same with readers that keep their read transaction from one search to the next
    /// until a commit (`Vault.keepsReadSnapshots`, as the daemon runs its vault).
    func testAReadAfterAWriteOnTheSameThreadSeesTheWriteKeepingSnapshots() throws { try readAfterWriteOnTheSameThread(keepingSnapshots: true) }

    private func readAfterWriteOnTheSameThread(keepingSnapshots: Bool) throws {
        let vault = try scratch.makeVault()
        vault.keepsReadSnapshots = keepingSnapshots
        concurrently(3) { t in
            for k in 0..<60 {
                let account = "t\(t)-\(k)"
                do {
                    try vault.addPassword(service: "rw", account: account, secret: "one")
                    XCTAssertEqual(try vault.password(service: "rw", account: account), "one")
                    try vault.update(["class": "genp", "svce": "rw", "acct": .string(account)], changes: [:], secret: secret("two"),
                                     accessGroups: groups)
                    XCTAssertEqual(try vault.password(service: "rw", account: account), "two")
                    try vault.delete(["class": "genp", "svce": "rw", "acct": .string(account)], accessGroups: groups)
                    XCTAssertStatus(.itemNotFound, try vault.password(service: "rw", account: account))
                } catch {
                    XCTFail("\(account): \(error)")
                }
            }
        }
    }

    /// The same queries on readers and on the write connection (the pool turned off) give the
    /// same items in the same order, or the same status.
    func testReadersAnswerAsTheWriteConnectionDoes() throws { try readersAnswerAsTheWriteConnection(keepingSnapshots: false) }
    /// The same with readers that keep their read transaction from one search to the next
    /// until a commit (`Vault.keepsReadSnapshots`, as the daemon runs its vault).
    func testReadersAnswerAsTheWriteConnectionDoesKeepingSnapshots() throws { try readersAnswerAsTheWriteConnection(keepingSnapshots: true) }

    private func readersAnswerAsTheWriteConnection(keepingSnapshots: Bool) throws {
        let vault = try scratch.makeVault()
        vault.keepsReadSnapshots = keepingSnapshots
        try vault.addPassword(service: "db", account: "app", secret: "shared", ["agrp": "app.shared", "labl": "one"])
        try vault.addPassword(service: "db", account: "app", secret: "synced", ["sync": true])
        try vault.addPassword(service: "db", account: "app", secret: "default")
        try vault.addPassword(service: "db", account: "other", secret: "other", ["pdmn": "ck"])
        try vault.addPassword(service: "db", account: "damaged", secret: "x")
        try vault.addPassword(service: "web", account: "app", secret: "web")
        try vault.add(["class": "inet", "srvr": "db.example", "acct": "admin", "port": 5432], secret: secret("inet"), accessGroups: groups)
        try Connection(path: scratch.path(), create: false)
            .execute("UPDATE items SET attrs = zeroblob(length(attrs)) WHERE rowid = 5")
        let ref = try XCTUnwrap(try vault.copyMatching(["class": "genp", "acct": "other", "r_PersistentRef": true],
                                                       accessGroups: groups).value)
        guard case .persistentRef(let refBytes) = ref else { return XCTFail("\(ref)") }
        let queries: [Attributes] = [
            ["class": "genp", "svce": "db", "acct": "app", "r_Data": true],
            ["class": "genp", "svce": "db", "acct": "app", "sync": "syna", "m_Limit": "m_LimitAll", "r_Data": true, "r_Attributes": true],
            ["class": "genp", "acct": "app", "sync": "syna", "m_Limit": "m_LimitAll", "r_Attributes": true],
            ["class": "genp", "svce": "db", "m_Limit": 2, "r_Data": true],
            ["class": "genp", "svce": "db", "acct": "damaged", "r_Data": true],
            ["class": "genp", "svce": "db", "m_Limit": "m_LimitAll", "r_Attributes": true],
            ["class": "genp", "svce": "db", "acct": "nobody", "r_Data": true],
            ["class": "genp", "svce": "db", "acct": "app", "agrp": "elsewhere", "r_Data": true],
            ["class": "genp", "labl": "one", "r_Data": true],
            ["class": "inet", "srvr": "db.example", "m_Limit": "m_LimitAll", "r_Attributes": true, "r_Data": true],
            ["v_PersistentRef": .data(refBytes), "r_Data": true, "r_Attributes": true],
            ["class": "genp", "svce": "db", "acct": "app"],
        ]
        func all() -> [Outcome] { queries.map { outcome(vault, $0) } + [outcome(vault, queries[0], groups: [])] }
        let onReaders = all()
        vault.readers.limit = 0
        XCTAssertEqual(all(), onReaders)
        vault.lock()
        let lockedOnWriter = all()
        vault.readers.limit = ReaderPool.defaultLimit
        XCTAssertEqual(all(), lockedOnWriter)
        XCTAssertTrue(lockedOnWriter.contains(.status(.interactionNotAllowed)))
        XCTAssertTrue(onReaders.contains(.status(.decode)))
    }
}
