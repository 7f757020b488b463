import Foundation
import KeychainTestSupport
import Security
import XCTest

/// PRODUCT 3, CopyMatching: the shape of the result for every combination of return keys
/// (none, r_Data, r_Attributes, r_PersistentRef, the pairs, all three) and every limit
/// (default, kSecMatchLimitOne, kSecMatchLimitAll, a number); insertion order; empty data;
/// nil result pointers; no match.
final class SecItemConformanceReturnTests: SecItemConformanceCase {
    /// The fixture's accounts in insertion order (not alphabetical), with their secrets;
    /// "b-third" has no data.
    let accounts = ["c-first", "a-second", "b-third"]
    let secrets: [String: Data] = ["c-first": Data("secret-1".utf8), "a-second": Data("secret-2".utf8), "b-third": Data()]

    enum Limit: String, CaseIterable {
        case unspecified, one, all, two
        var value: Any? {
            switch self {
            case .unspecified: return nil
            case .one: return kSecMatchLimitOne
            case .all: return kSecMatchLimitAll
            case .two: return 2
            }
        }
        var isArray: Bool { self == .all || self == .two }
    }

    /// Three generic passwords of a fresh service, added in the order of `accounts`.
    func makeFixture(_ tag: String = #function, file: StaticString = #filePath, line: UInt = #line) -> String {
        let service = unique(tag)
        for account in accounts {
            let data = secrets[account]!
            let status = addPassword(service: service, account: account, data: data.isEmpty ? nil : data)
            assertStatus(status, errSecSuccess, "add \(account)", file: file, line: line)
        }
        return service
    }

    /// The account an item's persistent reference designates.
    func account(forRef ref: Data) -> String? {
        let (status, result) = copyMatching([kSecClass as String: kSecClassGenericPassword,
                                             kSecValuePersistentRef as String: ref,
                                             kSecReturnAttributes as String: true])
        guard status == errSecSuccess else { return nil }
        return (result as? [String: Any])?[kSecAttrAccount as String] as? String
    }

    /// Checks one returned object against the return keys; gives the account it belongs to.
    func check(_ value: Any, returns: Set<String>, service: String, context: String,
               file: StaticString, line: UInt) -> String? {
        if returns == ["r_Data"] {
            guard let data = value as? Data else {
                XCTFail("\(context): expected bare Data, got \(shape(value))", file: file, line: line)
                return nil
            }
            let account = secrets.first { $0.value == data }?.key
            XCTAssertNotNil(account, "\(context): unknown secret \(data)", file: file, line: line)
            return account
        }
        if returns == ["r_PersistentRef"] {
            guard let ref = value as? Data else {
                XCTFail("\(context): expected a bare persistent reference (Data), got \(shape(value))", file: file, line: line)
                return nil
            }
            XCTAssertFalse(ref.isEmpty, "\(context): empty persistent reference", file: file, line: line)
            let account = account(forRef: ref)
            XCTAssertNotNil(account, "\(context): the reference designates no item", file: file, line: line)
            return account
        }
        // r_Attributes, or several return keys: one flat dictionary.
        guard let dict = value as? [String: Any] else {
            XCTFail("\(context): expected a dictionary, got \(shape(value))", file: file, line: line)
            return nil
        }
        var account: String?
        if returns.contains("r_Attributes") {
            XCTAssertEqual(dict[kSecClass as String] as? String, "genp", "\(context)", file: file, line: line)
            XCTAssertEqual(dict[kSecAttrService as String] as? String, service, "\(context)", file: file, line: line)
            account = dict[kSecAttrAccount as String] as? String
            XCTAssertNotNil(account.flatMap { secrets[$0] }, "\(context): account \(String(describing: account))",
                            file: file, line: line)
        } else {
            XCTAssertTrue(Set(dict.keys).isSubset(of: ["v_Data", "v_PersistentRef"]),
                          "\(context): attributes without r_Attributes: \(dict.keys.sorted())", file: file, line: line)
        }
        if returns.contains("r_Data") {
            if let data = dict[kSecValueData as String] as? Data {
                if let account {
                    XCTAssertEqual(data, secrets[account], "\(context): v_Data of \(account)", file: file, line: line)
                } else {
                    account = secrets.first { $0.value == data }?.key
                }
            } else {
                XCTFail("\(context): no v_Data in \(dict.keys.sorted())", file: file, line: line)
            }
        } else {
            XCTAssertNil(dict[kSecValueData as String], "\(context): v_Data without r_Data", file: file, line: line)
        }
        if returns.contains("r_PersistentRef") {
            if let ref = dict[kSecValuePersistentRef as String] as? Data {
                let owner = self.account(forRef: ref)
                if let account {
                    XCTAssertEqual(owner, account, "\(context): v_PersistentRef", file: file, line: line)
                } else {
                    account = owner
                }
            } else {
                XCTFail("\(context): no v_PersistentRef in \(dict.keys.sorted())", file: file, line: line)
            }
        } else {
            XCTAssertNil(dict[kSecValuePersistentRef as String], "\(context): v_PersistentRef without r_PersistentRef",
                         file: file, line: line)
        }
        return account
    }

    /// Runs the fixture query with `returns` under every limit and checks the shapes.
    func checkAllLimits(returns: Set<String>, _ tag: String = #function, file: StaticString = #filePath, line: UInt = #line) {
        let service = makeFixture(tag, file: file, line: line)
        for limit in Limit.allCases {
            let context = "returns \(returns.sorted()), limit \(limit)"
            var query = genp(service)
            for key in returns { query[key] = true }
            if let v = limit.value { query[kSecMatchLimit as String] = v }
            let (status, result) = copyMatching(query)
            assertStatus(status, errSecSuccess, context, file: file, line: line)
            if returns.isEmpty {
                XCTAssertNil(result, "\(context): no return key gives the status only, got \(shape(result))",
                             file: file, line: line)
                continue
            }
            guard let result else {
                XCTFail("\(context): no result", file: file, line: line)
                continue
            }
            if limit.isArray {
                guard let array = result as? [Any] else {
                    XCTFail("\(context): expected an array, got \(shape(result))", file: file, line: line)
                    continue
                }
                let found = array.map { check($0, returns: returns, service: service, context: context, file: file, line: line) }
                let expected = Array(accounts.prefix(limit == .two ? 2 : 3))
                XCTAssertEqual(found.map { $0 ?? "?" }, expected, "\(context): insertion order", file: file, line: line)
            } else {
                XCTAssertNil(result as? [Any], "\(context): one object expected, got an array", file: file, line: line)
                let account = check(result, returns: returns, service: service, context: context, file: file, line: line)
                XCTAssertNotNil(account, "\(context): the object belongs to no fixture item", file: file, line: line)
            }
        }
    }

    // MARK: Every combination of return keys, under every limit

    func testNoReturnKeyGivesStatusOnly() {
        checkAllLimits(returns: [])
    }

    func testReturnDataAloneGivesBareData() {
        checkAllLimits(returns: ["r_Data"])
    }

    func testReturnPersistentRefAloneGivesBareData() {
        checkAllLimits(returns: ["r_PersistentRef"])
    }

    func testReturnAttributesGivesOneDictionary() {
        checkAllLimits(returns: ["r_Attributes"])
    }

    func testReturnDataAndAttributesGiveOneDictionaryWithValueData() {
        checkAllLimits(returns: ["r_Data", "r_Attributes"])
    }

    func testReturnDataAndPersistentRefGiveOneDictionary() {
        checkAllLimits(returns: ["r_Data", "r_PersistentRef"])
    }

    func testReturnAttributesAndPersistentRefGiveOneDictionary() {
        checkAllLimits(returns: ["r_Attributes", "r_PersistentRef"])
    }

    func testAllThreeReturnKeysGiveOneDictionary() {
        checkAllLimits(returns: ["r_Data", "r_Attributes", "r_PersistentRef"])
    }

    // MARK: Limits

    func testDefaultLimitIsOne() {
        let service = makeFixture()
        let (status, result) = copyMatching(genp(service).merging([kSecReturnAttributes as String: true]) { $1 })
        assertStatus(status, errSecSuccess)
        XCTAssertNotNil(result as? [String: Any], "one dictionary expected, got \(shape(result))")
    }

    func testMatchLimitAllOrANumberGivesAnArrayEvenForOneHit() {
        let service = makeFixture()
        for limit: Any in [kSecMatchLimitAll, 1, 5] {
            let (status, result) = copyMatching(genp(service, "c-first").merging([
                kSecReturnAttributes as String: true, kSecMatchLimit as String: limit]) { $1 })
            assertStatus(status, errSecSuccess, "limit \(limit)")
            let array = result as? [Any]
            XCTAssertEqual(array?.count, 1, "limit \(limit): an array of one expected, got \(shape(result))")
            XCTAssertEqual((array?.first as? [String: Any])?[kSecAttrAccount as String] as? String, "c-first")
        }
        let (status, result) = copyMatching(genp(service, "c-first").merging([
            kSecReturnAttributes as String: true, kSecMatchLimit as String: kSecMatchLimitOne]) { $1 })
        assertStatus(status, errSecSuccess)
        XCTAssertNotNil(result as? [String: Any], "kSecMatchLimitOne: one object expected, got \(shape(result))")
    }

    func testMatchLimitAllReturnsItemsInInsertionOrder() {
        let service = unique()
        let order = ["m", "b", "z", "a", "q", "c", "y", "d"]
        for account in order {
            assertStatus(addPassword(service: service, account: account, data: Data(account.utf8)), errSecSuccess)
        }
        let (status, result) = copyMatching(genp(service).merging([
            kSecReturnAttributes as String: true, kSecMatchLimit as String: kSecMatchLimitAll]) { $1 })
        assertStatus(status, errSecSuccess)
        let found = (result as? [[String: Any]])?.compactMap { $0[kSecAttrAccount as String] as? String }
        XCTAssertEqual(found, order)
        // A number limit takes the first ones in that order.
        let (s3, r3) = copyMatching(genp(service).merging([kSecReturnData as String: true, kSecMatchLimit as String: 3]) { $1 })
        assertStatus(s3, errSecSuccess)
        XCTAssertEqual((r3 as? [Data])?.map { String(decoding: $0, as: UTF8.self) }, Array(order.prefix(3)))
    }

    func testReturnDataWithMatchLimitAllIsAllowed() {
        let service = makeFixture()
        let (status, result) = copyMatching(genp(service).merging([
            kSecReturnData as String: kCFBooleanTrue!, kSecMatchLimit as String: kSecMatchLimitAll]) { $1 })
        assertStatus(status, errSecSuccess)
        XCTAssertEqual(result as? [Data], accounts.map { secrets[$0]! })
    }

    // MARK: Items without data

    func testItemWithoutDataGivesEmptyData() {
        let service = makeFixture()
        let (status, data) = dataOf(genp(service, "b-third"))
        assertStatus(status, errSecSuccess)
        XCTAssertEqual(data, Data(), "bare empty Data expected")
        let (s2, r2) = copyMatching(genp(service, "b-third").merging([
            kSecReturnData as String: true, kSecReturnAttributes as String: true]) { $1 })
        assertStatus(s2, errSecSuccess)
        XCTAssertEqual((r2 as? [String: Any])?[kSecValueData as String] as? Data, Data(), "v_Data: empty Data expected")
    }

    // MARK: Result pointers and no match

    func testReturnKeyWithNilResultPointerIsParam() {
        let service = makeFixture()
        for key in [kSecReturnData, kSecReturnAttributes, kSecReturnPersistentRef] {
            let query = genp(service).merging([key as String: true]) { $1 }
            assertStatus(SecItemCopyMatching(query as CFDictionary, nil), errSecParam, "\(key) with a nil result")
        }
        // Without a return key, a nil result pointer is fine.
        assertStatus(SecItemCopyMatching(genp(service) as CFDictionary, nil), errSecSuccess, "no return key")
    }

    func testNoMatchIsItemNotFoundAndResultStaysNil() {
        let service = makeFixture()
        for returns: [String] in [[], ["r_Data"], ["r_Attributes"], ["r_PersistentRef"], ["r_Data", "r_Attributes", "r_PersistentRef"]] {
            for limit in Limit.allCases {
                var query = genp(service, "nobody")
                for key in returns { query[key] = true }
                if let v = limit.value { query[kSecMatchLimit as String] = v }
                let (status, result) = copyMatching(query)
                assertStatus(status, errSecItemNotFound, "\(returns) \(limit)")
                XCTAssertNil(result, "\(returns) \(limit): result set on no match: \(shape(result))")
            }
        }
        assertStatus(SecItemCopyMatching(genp(unique("empty-service")) as CFDictionary, nil), errSecItemNotFound)
    }

    // MARK: Persistent references and add results

    func testPersistentRefSelectsItsItemForSearchUpdateAndDelete() {
        let service = makeFixture()
        let (status, result) = copyMatching(genp(service, "a-second").merging([kSecReturnPersistentRef as String: true]) { $1 })
        assertStatus(status, errSecSuccess)
        guard let ref = result as? Data else { return XCTFail("no persistent reference: \(shape(result))") }
        XCTAssertEqual(dataOf([kSecClass as String: kSecClassGenericPassword, kSecValuePersistentRef as String: ref]).data,
                       secrets["a-second"])
        let byRef: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecValuePersistentRef as String: ref]
        assertStatus(SecItemUpdate(byRef as CFDictionary, [kSecAttrLabel as String: "by-ref"] as CFDictionary), errSecSuccess)
        XCTAssertEqual(attributesOf(genp(service, "a-second"))?[kSecAttrLabel as String] as? String, "by-ref")
        XCTAssertNil(attributesOf(genp(service, "c-first"))?[kSecAttrLabel as String], "update by reference changed another item")
        assertStatus(SecItemDelete(byRef as CFDictionary), errSecSuccess)
        XCTAssertEqual(count(genp(service)), 2, "delete by reference removes exactly its item")
    }

    func testAddWithReturnKeysGivesTheNewItem() {
        let service = unique()
        var result: CFTypeRef?
        let add: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                                  kSecAttrAccount as String: "new", kSecValueData as String: Data("v".utf8),
                                  kSecReturnAttributes as String: true, kSecReturnPersistentRef as String: true]
        assertStatus(SecItemAdd(add as CFDictionary, &result), errSecSuccess)
        let dict = result as? [String: Any]
        XCTAssertEqual(dict?[kSecAttrAccount as String] as? String, "new", "got \(shape(result))")
        let ref = dict?[kSecValuePersistentRef as String] as? Data
        XCTAssertNotNil(ref)
        let (_, found) = copyMatching(genp(service, "new").merging([kSecReturnPersistentRef as String: true]) { $1 })
        XCTAssertEqual(found as? Data, ref, "the add's persistent reference is the item's")
    }
}
