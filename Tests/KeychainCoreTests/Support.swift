import Foundation
import KeychainCore
import KeychainCrypto
import XCTest

/// A scratch directory with a device key and helpers to make vaults with the cheapest KDF.
final class Scratch {
    let dir: String

    init() throws {
        dir = NSTemporaryDirectory() + "keychainfs-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    /// A device key file in this directory; `name` lets one test play several machines.
    func deviceKey(_ name: String = "device") throws -> DeviceKey {
        try DeviceKey.loadOrCreate(at: dir + "/\(name).key")
    }

    func path(_ name: String = "test.vault") -> String { dir + "/" + name }

    func makeVault(_ name: String = "test.vault", passphrase: String? = "correct horse",
                   device: String = "device") throws -> Vault {
        try Vault.create(at: path(name), passphrase: passphrase.map(secret), kdf: .minimum,
                         deviceKey: try deviceKey(device))
    }
}

func secret(_ s: String) throws -> SecureBytes { try SecureBytes(copying: Array(s.utf8)) }

extension SecureBytes {
    var string: String { withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
}

let groups = ["app.default", "app.shared"]

/// Asserts that `body` throws exactly `status`.
func XCTAssertStatus<T>(_ status: KeychainStatus, _ body: @autoclosure () throws -> T,
                        file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertThrowsError(try body(), file: file, line: line) { error in
        XCTAssertEqual(error as? KeychainStatus, status, "got \(error)", file: file, line: line)
    }
}

extension Vault {
    /// The secret of one generic password, through CopyMatching with r_Data.
    func password(service: String, account: String, groups: [String] = groups) throws -> String {
        let r = try copyMatching(["class": "genp", "svce": .string(service), "acct": .string(account), "r_Data": true],
                                 accessGroups: groups)
        guard let data = r.value?.data else { throw KeychainStatus.decode }
        return data.string
    }

    func addPassword(service: String, account: String, secret s: String, _ extra: Attributes = [:],
                     groups: [String] = groups) throws {
        var attrs: Attributes = ["class": "genp", "svce": .string(service), "acct": .string(account)]
        attrs.merge(extra) { _, b in b }
        try add(attrs, secret: secret(s), accessGroups: groups)
    }
}
