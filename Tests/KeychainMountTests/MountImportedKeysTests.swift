import Foundation
import KeychainTestSupport
import XCTest

/// Keys and certificates brought in by `keychainfs import` are the same items `SecItemAdd` makes:
/// the mount serves them as the PEM openssl writes, and a key imported with `-x` has no file.
final class MountImportedKeysTests: MountTestCase {
    func testImportedIdentityIsServedAsPEM() throws {
        let material = URL(fileURLWithPath: h.dir + "/material")
        try FileManager.default.createDirectory(at: material, withIntermediateDirectories: true)
        let tls = try TLSMaterial(in: material, commonName: "imported.example")
        let combined = material.appendingPathComponent("server.pem")
        try (try Data(contentsOf: tls.keyPEM) + tls.certificatePEM).write(to: combined)
        let r = try h.run(["import", combined.path, "-l", "server"])
        XCTAssertEqual(r.status, 0, "\(r)")
        XCTAssertEqual(r.stdout, "1 identity imported.\n")
        let sealed = try TLSMaterial(in: material, commonName: "sealed.example", serial: "0x2002")
        let x = try h.run(["import", sealed.keyPEM.path, "-x", "-l", "sealed"])
        XCTAssertEqual(x.status, 0, "\(x)")

        let mnt = try mount()
        XCTAssertEqual(FS.list(mnt + "/.keys").names, ["server.pem"], "no file for the non-extractable key")
        XCTAssertEqual(FS.read(mnt + "/.keys/server.pem").bytes.map { Data($0) }, try TLSMaterial.openssl(["pkey", "-in", tls.keyPEM.path]))
        XCTAssertEqual(FS.read(mnt + "/.certificates/server.pem").bytes.map { Data($0) }, tls.certificatePEM)
    }
}
