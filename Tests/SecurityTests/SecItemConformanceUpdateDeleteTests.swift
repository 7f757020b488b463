import Foundation
import KeychainTestSupport
import Security
import XCTest

/// PRODUCT 3: the rules of SecItemUpdate and SecItemDelete.
final class SecItemConformanceUpdateDeleteTests: SecItemConformanceCase {
    /// A service with accounts "a", "b", "c", each with data "<account>-secret".
    func makeFixture(_ tag: String = #function) -> String {
        let service = unique(tag)
        for account in ["a", "b", "c"] {
            assertStatus(addPassword(service: service, account: account, data: Data("\(account)-secret".utf8)), errSecSuccess)
        }
        return service
    }

    func label(_ service: String, _ account: String) -> String? {
        attributesOf(genp(service, account))?[kSecAttrLabel as String] as? String
    }

    // MARK: Update

    func testUpdateWithReturnKeyInQueryIsParam() {
        let service = makeFixture()
        for key in [kSecReturnData, kSecReturnAttributes, kSecReturnPersistentRef] {
            let query = genp(service, "a").merging([key as String: true]) { $1 }
            assertStatus(SecItemUpdate(query as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary), errSecParam,
                         "\(key)")
        }
        XCTAssertNil(label(service, "a"), "nothing changed")
    }

    func testUpdateWithMatchKeyInQueryIsParam() {
        let service = makeFixture()
        for limit: Any in [kSecMatchLimitOne, kSecMatchLimitAll, 2] {
            let query = genp(service).merging([kSecMatchLimit as String: limit]) { $1 }
            assertStatus(SecItemUpdate(query as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary), errSecParam,
                         "kSecMatchLimit \(limit)")
        }
        XCTAssertNil(label(service, "a"), "nothing changed")
    }

    func testUpdateOfClassIsNoSuchAttr() {
        let service = makeFixture()
        let changes: [String: Any] = [kSecClass as String: kSecClassInternetPassword]
        assertStatus(SecItemUpdate(genp(service, "a") as CFDictionary, changes as CFDictionary), errSecNoSuchAttr)
        XCTAssertEqual(count(genp(service, "a")), 1, "still a generic password")
    }

    func testUpdateOfAnAttributeTheClassLacksIsNoSuchAttr() {
        let service = makeFixture()
        let changes: [String: Any] = [kSecAttrServer as String: "example.com"]
        assertStatus(SecItemUpdate(genp(service, "a") as CFDictionary, changes as CFDictionary), errSecNoSuchAttr)
    }

    func testUpdateChangesEveryMatch() {
        let service = makeFixture()
        let other = makeFixture("other")
        assertStatus(SecItemUpdate(genp(service) as CFDictionary, [kSecAttrLabel as String: "all"] as CFDictionary),
                     errSecSuccess)
        XCTAssertEqual(["a", "b", "c"].map { label(service, $0) }, ["all", "all", "all"])
        XCTAssertEqual(["a", "b", "c"].map { label(other, $0) }, [nil, nil, nil], "items outside the query unchanged")
    }

    func testUpdateReplacesTheData() {
        let service = makeFixture()
        assertStatus(SecItemUpdate(genp(service, "b") as CFDictionary, [kSecValueData as String: Data("new".utf8)] as CFDictionary),
                     errSecSuccess)
        XCTAssertEqual(dataOf(genp(service, "b")).data, Data("new".utf8))
        XCTAssertEqual(dataOf(genp(service, "a")).data, Data("a-secret".utf8))
    }

    func testUpdateWithoutMatchIsItemNotFound() {
        let service = makeFixture()
        assertStatus(SecItemUpdate(genp(service, "nobody") as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary),
                     errSecItemNotFound)
    }

    func testUpdateCollidingWithAnotherItemIsDuplicateItemAndChangesNothing() {
        let service = makeFixture()
        let changes: [String: Any] = [kSecAttrAccount as String: "b", kSecAttrLabel as String: "moved"]
        assertStatus(SecItemUpdate(genp(service, "a") as CFDictionary, changes as CFDictionary), errSecDuplicateItem)
        XCTAssertNil(label(service, "a"))
        XCTAssertNil(label(service, "b"))
        // Two matches given the same primary key collide with each other too.
        assertStatus(SecItemUpdate(genp(service) as CFDictionary, [kSecAttrAccount as String: "z"] as CFDictionary),
                     errSecDuplicateItem)
        XCTAssertEqual(count(genp(service)), 3)
        XCTAssertEqual(count(genp(service, "z")), 0)
    }

    func testUpdateMovingToAGroupTheCallerLacksIsMissingEntitlement() {
        let service = makeFixture()
        let changes: [String: Any] = [kSecAttrAccessGroup as String: "group.com.example.not-mine"]
        assertStatus(SecItemUpdate(genp(service, "a") as CFDictionary, changes as CFDictionary), errSecMissingEntitlement)
        XCTAssertEqual(attributesOf(genp(service, "a"))?[kSecAttrAccessGroup as String] as? String, "default")
        // Its own group is fine.
        assertStatus(SecItemUpdate(genp(service, "a") as CFDictionary, [kSecAttrAccessGroup as String: "default"] as CFDictionary),
                     errSecSuccess)
    }

    func testUpdateMovesTheModificationDateButNotTheCreationDate() {
        let service = makeFixture()
        guard let before = attributesOf(genp(service, "a")),
              let created = before[kSecAttrCreationDate as String] as? Date,
              let modified = before[kSecAttrModificationDate as String] as? Date else {
            return XCTFail("cdat and mdat are set by the store")
        }
        XCTAssertEqual(created, modified)
        usleep(20_000)
        assertStatus(SecItemUpdate(genp(service, "a") as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary),
                     errSecSuccess)
        let after = attributesOf(genp(service, "a"))
        XCTAssertEqual(after?[kSecAttrCreationDate as String] as? Date, created)
        XCTAssertGreaterThan((after?[kSecAttrModificationDate as String] as? Date) ?? .distantPast, modified)
    }

    // MARK: Delete

    func testDeleteRemovesEveryMatch() {
        let service = makeFixture()
        let other = makeFixture("other")
        assertStatus(SecItemDelete(genp(service) as CFDictionary), errSecSuccess)
        XCTAssertEqual(count(genp(service)), 0)
        XCTAssertEqual(count(genp(other)), 3, "items outside the query stay")
    }

    func testDeleteAcceptsMatchLimit() {
        let all = makeFixture("all")
        assertStatus(SecItemDelete(genp(all).merging([kSecMatchLimit as String: kSecMatchLimitAll]) { $1 } as CFDictionary),
                     errSecSuccess, "kSecMatchLimitAll")
        XCTAssertEqual(count(genp(all)), 0)
        // The limit is accepted, and a delete still removes every match (PRODUCT 3).
        let one = makeFixture("one")
        assertStatus(SecItemDelete(genp(one).merging([kSecMatchLimit as String: kSecMatchLimitOne]) { $1 } as CFDictionary),
                     errSecSuccess, "kSecMatchLimitOne")
        XCTAssertEqual(count(genp(one)), 0)
    }

    /// The most copied iOS wrapper saves with one dictionary (class, account, kSecValueData):
    /// `SecItemDelete(query); SecItemAdd(query, nil)`. securityd accepts kSecValueData in a
    /// delete (query_add_value keeps it; _SecItemDelete rejects only limits, match keys and
    /// value refs), so the delete removes the old item and the add succeeds every time.
    func testDeleteWithValueDataInTheQueryDeletesTheItem() throws {
        let account = unique()
        func save(_ secret: String) -> (delete: OSStatus, add: OSStatus) {
            let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword as String,
                                        kSecAttrAccount as String: account,
                                        kSecValueData as String: Data(secret.utf8)]
            let delete = SecItemDelete(query as CFDictionary)
            return (delete, SecItemAdd(query as CFDictionary, nil))
        }
        let first = save("one")
        assertStatus(first.add, errSecSuccess, "first save")
        let second = save("two")
        assertStatus(second.delete, errSecSuccess, "delete with kSecValueData")
        assertStatus(second.add, errSecSuccess, "second save")
        let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: account]
        XCTAssertEqual(dataOf(query).data, Data("two".utf8))
    }

    func testDeleteWithoutMatchIsItemNotFound() {
        let service = makeFixture()
        assertStatus(SecItemDelete(genp(service, "nobody") as CFDictionary), errSecItemNotFound)
        XCTAssertEqual(count(genp(service)), 3)
    }
}
