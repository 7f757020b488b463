import Dispatch
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainKeys
import KeychainProtocol
import Synchronization
import XCTest
@testable import KeychainDaemon

/// The daemon keeps the private keys `useKey` opened (`OpenedKeys`): a kept key signs, and
/// nothing a use may do depends on it being kept: the lock empties it and refuses, a deleted or
/// changed item is not used from it, another caller's groups are checked on each use, presence is
/// asked each time, and it holds at most `OpenedKeys.limit` keys.
final class OpenedKeysTests: XCTestCase {
    private var d: InProcessDaemon!
    private let sign = "algid:sign:ECDSA:message-X962:SHA256"
    private let message = Array("message".utf8)

    override func setUpWithError() throws { d = try InProcessDaemon() }
    override func tearDown() { d?.stop() }

    private var kept: Int { d.daemon.openedKeys.count }

    /// Adds `key` as a private key item; returns its persistent reference.
    private func store(_ key: AsymmetricKey, _ extra: Attributes = [:]) throws -> [UInt8] {
        var query: Attributes = ["class": "keys", "kcls": .number(1), "type": .number(key.appleTypeCode),
                                 "klbl": .data(DigestAlgorithm.sha1.hash(key.publicBytes())), "r_PersistentRef": true]
        for (k, v) in extra { query[k] = v }
        let r = try d.call(Request(.add, query: query, secrets: [try key.privateBytes()]))
        guard case .value(.persistentRef(let ref)) = r.result else {
            XCTFail("no reference: \(r.status) \(r.result)")
            return []
        }
        return ref
    }

    private func use(_ ref: [UInt8], as caller: CallerIdentity = InProcessDaemon.owner) throws -> Response {
        try d.call(Request(.useKey, query: ["v_PersistentRef": .data(ref)], options: ["use": "sign", "algorithm": .string(sign)],
                           secrets: [try SecureBytes(copying: message)]), as: caller)
    }

    private func verifies(_ r: Response, _ key: AsymmetricKey) throws -> Bool {
        guard case .value(.data(let sig)) = r.result else { return false }
        let signature = sig.withUnsafeBytes { Array($0) }
        return try key.publicKey().verify(signature: signature, digest: DigestAlgorithm.sha256.hash(message), hash: .sha256,
                                          scheme: .ecdsaX962)
    }

    func testAKeptKeySignsAndEachSignatureVerifies() throws {
        let key = try AsymmetricKey.generate(.p256)
        let ref = try store(key, ["extr": .bool(false)])
        XCTAssertEqual(kept, 0)
        for _ in 0..<3 { XCTAssertTrue(try verifies(try use(ref), key)) }
        XCTAssertEqual(kept, 1, "opened once, kept for the next uses")
    }

    func testTheLockEmptiesTheCacheAndTheUseIsRefused() throws {
        let ref = try store(try AsymmetricKey.generate(.p256))
        XCTAssertEqual(try use(ref).status, .success)
        XCTAssertEqual(kept, 1)
        XCTAssertEqual(try d.call(Request(.lock)).status, .success)
        XCTAssertEqual(kept, 0, "the lock freed it at once")
        XCTAssertEqual(try use(ref).status, .interactionNotAllowed)
        XCTAssertEqual(kept, 0)
    }

    func testTheIdleLockEmptiesTheCache() throws {
        let ref = try store(try AsymmetricKey.generate(.p256))
        XCTAssertEqual(try use(ref).status, .success)
        d.daemon.lockEverywhere(trigger: "idle")  // what the idle timer calls
        XCTAssertEqual(kept, 0)
        XCTAssertEqual(try use(ref).status, .interactionNotAllowed)
    }

    func testAKeyKeptBeforeALockOfTheVaultAloneIsNotUsed() throws {
        let ref = try store(try AsymmetricKey.generate(.p256))
        XCTAssertEqual(try use(ref).status, .success)
        d.daemon.vault.lock()  // not through the daemon: the entry is still there
        XCTAssertEqual(kept, 1)
        XCTAssertEqual(try use(ref).status, .interactionNotAllowed, "the vault's stamp refuses it")
        XCTAssertEqual(kept, 0, "and it is dropped")
    }

    func testADeletedKeyIsNotFoundThoughItWasKept() throws {
        let ref = try store(try AsymmetricKey.generate(.p256))
        XCTAssertEqual(try use(ref).status, .success)
        XCTAssertEqual(try d.call(Request(.delete, query: ["v_PersistentRef": .data(ref)])).status, .success)
        XCTAssertEqual(kept, 0, "a delete empties the cache")
        XCTAssertEqual(try use(ref).status, .itemNotFound)

        // Deleted in the vault, behind the daemon's back: the stamp still refuses the kept key.
        let other = try store(try AsymmetricKey.generate(.p256))
        XCTAssertEqual(try use(other).status, .success)
        XCTAssertEqual(kept, 1)
        try d.daemon.vault.delete(["v_PersistentRef": .data(other)], accessGroups: ["default"])
        XCTAssertEqual(try use(other).status, .itemNotFound)
    }

    func testAnUpdateThatTakesAwaySigningIsRefused() throws {
        let ref = try store(try AsymmetricKey.generate(.p256))
        XCTAssertEqual(try use(ref).status, .success)
        XCTAssertEqual(try d.call(Request(.update, query: ["v_PersistentRef": .data(ref)], changes: ["sign": .bool(false)])).status,
                       .success)
        XCTAssertEqual(try use(ref).status, .keyUsageIncorrect)
        XCTAssertEqual(try d.call(Request(.update, query: ["v_PersistentRef": .data(ref)], changes: ["sign": .bool(true)])).status,
                       .success)
        XCTAssertEqual(try use(ref).status, .success)
        // Changed in the vault alone: the kept key's usage is not trusted.
        _ = try d.daemon.vault.update(["v_PersistentRef": .data(ref)], changes: ["sign": .bool(false)], accessGroups: ["default"])
        XCTAssertEqual(kept, 1)
        XCTAssertEqual(try use(ref).status, .keyUsageIncorrect)
    }

    func testAnotherUserCannotUseAKeyTheOwnerJustUsed() throws {
        let ref = try store(try AsymmetricKey.generate(.p256))
        XCTAssertEqual(try use(ref).status, .success)
        XCTAssertEqual(kept, 1)
        XCTAssertEqual(try use(ref, as: InProcessDaemon.outsider).status, .itemNotFound, "as without the cache")
        XCTAssertEqual(try use(ref).status, .success, "the owner's entry is still good")
    }

    func testAMemberLosesTheKeyWithItsGroup() throws {
        let member = CallerIdentity(pid: getpid(), uid: 54_322, gid: 54_322, groups: [54_322], executable: nil)
        XCTAssertEqual(try d.call(Request(.groupAdd, options: ["name": "web", "gid": .number(54_322), "mode": .number(0o440)])).status,
                       .success)
        let ref = try store(try AsymmetricKey.generate(.p256), ["agrp": "web"])
        XCTAssertEqual(try use(ref, as: member).status, .success)
        XCTAssertEqual(kept, 1)
        XCTAssertEqual(try d.call(Request(.groupSet, options: ["name": "web", "gid": .number(54_999)])).status, .success)
        XCTAssertEqual(kept, 0, "a group change empties the cache")
        XCTAssertEqual(try use(ref, as: member).status, .itemNotFound)
        XCTAssertEqual(try use(ref).status, .success)
        // The table changed but no item did: the kept key is checked against the new groups.
        XCTAssertEqual(kept, 1)
        d.daemon.state.withLock { $0.groupTable.groups[0].gid = 54_322 }
        XCTAssertEqual(try use(ref, as: member).status, .success)
        d.daemon.state.withLock { $0.groupTable.groups[0].gid = 54_999 }
        XCTAssertEqual(kept, 1)
        XCTAssertEqual(try use(ref, as: member).status, .itemNotFound)
    }

    func testAPresenceGatedKeyAsksForEachUseThoughItIsKept() throws {
        let control = AccessControl(protection: .whenUnlocked, flags: AccessControl.userPresence)
        let ref = try store(try AsymmetricKey.generate(.p256), ["accc": control.value])
        XCTAssertEqual(try d.call(Request(.setSettings, options: ["approval-program": "/bin/true"])).status, .success)
        XCTAssertEqual(try use(ref).status, .success)
        XCTAssertEqual(kept, 1)
        XCTAssertEqual(try d.call(Request(.setSettings, options: ["approval-program": "/bin/false"])).status, .success)
        XCTAssertEqual(try use(ref).status, .userCanceled, "asked again, and denied")
        let failUI = try d.call(Request(.useKey, query: ["v_PersistentRef": .data(ref), "u_AuthUI": "u_AuthUIF"],
                                        options: ["use": "sign", "algorithm": .string(sign)], secrets: [try SecureBytes(copying: [1])]))
        XCTAssertEqual(failUI.status, .interactionNotAllowed, "kSecUseAuthenticationUIFail asks nobody, kept or not")
    }

    func testTheCacheNeverHoldsMoreThanItsBound() throws {
        var keys: [(AsymmetricKey, [UInt8])] = []
        for _ in 0..<(OpenedKeys.limit + 4) {
            let key = try AsymmetricKey.generate(.p256)
            keys.append((key, try store(key)))
        }
        for (key, ref) in keys {
            XCTAssertTrue(try verifies(try use(ref), key))
            XCTAssertLessThanOrEqual(kept, OpenedKeys.limit)
        }
        XCTAssertEqual(kept, OpenedKeys.limit)
        XCTAssertTrue(try verifies(try use(keys[0].1), keys[0].0), "an evicted key is opened again")
        XCTAssertEqual(kept, OpenedKeys.limit)
    }

    func testUsesFromManyThreadsAtOnceAllVerify() throws {
        let key = try AsymmetricKey.generate(.p256)
        let ref = try store(key)
        let request = Request(.useKey, query: ["v_PersistentRef": .data(ref)], options: ["use": "sign", "algorithm": .string(sign)],
                              secrets: [try SecureBytes(copying: message)])
        let digest = DigestAlgorithm.sha256.hash(message)
        nonisolated(unsafe) let d = self.d!
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            for n in 0..<25 {
                // Now and then a change of another item empties the cache under the others' uses.
                if i == 0 && n % 5 == 0 { try? d.addPassword(service: "s", account: "a\(n)", secret: "x") }
                var ok = false
                if case .value(.data(let sig))? = try? d.call(request).result {
                    ok = (try? key.publicKey().verify(signature: sig.withUnsafeBytes { Array($0) }, digest: digest,
                                                      hash: .sha256, scheme: .ecdsaX962)) ?? false
                }
                if !ok { failures.withLock { $0 += 1 } }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, 0)
        XCTAssertLessThanOrEqual(kept, 1)
    }
}
