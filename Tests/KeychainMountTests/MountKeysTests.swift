import Foundation
import KeychainTestSupport
import Security
import XCTest

/// Private keys and certificates as PEM under `/.keys/<label>.pem` and `/.certificates/<label>.pem`
/// (PRODUCT 12): the bytes are what openssl writes for the same key and certificate, `stat`
/// gives their length without decrypting, the files are read-only, non-extractable keys have
/// none, the group's mode and the audit log apply, and the lock makes the key vanish.
final class MountKeysTests: MountTestCase {
    var material: URL { URL(fileURLWithPath: h.dir + "/material") }

    func makeMaterial(_ name: String, serial: String = "0x1001") throws -> TLSMaterial {
        try? FileManager.default.createDirectory(at: material, withIntermediateDirectories: true)
        return try TLSMaterial(in: material, commonName: name, serial: serial)
    }

    func testKeyAndCertificateReadAsTheirPEM() throws {
        let tls = try makeMaterial("server.example")
        try storeTLS(tls, label: "server")
        let mnt = try mount()
        XCTAssertEqual(FS.list(mnt).names?.sorted(), [".certificates", ".keys"])
        XCTAssertEqual(FS.list(mnt + "/.keys").names, ["server.pem"])
        XCTAssertEqual(FS.list(mnt + "/.certificates").names, ["server.pem"])

        // openssl's own PKCS#8 PEM of the key, and PEM of the certificate.
        let pkcs8 = try TLSMaterial.openssl(["pkey", "-in", tls.keyPEM.path])
        let key = FS.read(mnt + "/.keys/server.pem")
        XCTAssertEqual(key.bytes.map { Data($0) }, pkcs8, "PKCS#8 PEM, byte for byte as openssl pkey writes it")
        XCTAssertEqual(FS.read(mnt + "/.certificates/server.pem").bytes.map { Data($0) }, tls.certificatePEM)
        XCTAssertEqual(FS.stat(mnt + "/.keys/server.pem").st.map { Int($0.st_size) }, pkcs8.count, "size known at stat")
        XCTAssertEqual(FS.stat(mnt + "/.certificates/server.pem").st.map { Int($0.st_size) }, tls.certificatePEM.count)
        XCTAssertEqual(FS.stat(mnt + "/.keys/server.pem").st.map { Int($0.st_mode & 0o7777) }, 0o400, "the group's mode")
        XCTAssertEqual(FS.xattr(mnt + "/.keys/server.pem", "user.keychain.class"), "keys")
        XCTAssertEqual(FS.xattr(mnt + "/.certificates/server.pem", "user.keychain.label"), "server")

        // openssl reads the key from the mount and it matches the certificate.
        let fromMount = try TLSMaterial.openssl(["pkey", "-in", mnt + "/.keys/server.pem", "-pubout"])
        let fromCert = try TLSMaterial.openssl(["x509", "-in", mnt + "/.certificates/server.pem", "-noout", "-pubkey"])
        XCTAssertEqual(fromMount, fromCert)

        // Read-only: no writes, renames, deletions or new files.
        assertErrno(FS.write(mnt + "/.keys/server.pem", "x"), EPERM, "write")
        assertErrno(FS.write(mnt + "/.keys/new.pem", "x"), EPERM, "create")
        assertErrno(FS.check(Glibc.unlink(mnt + "/.certificates/server.pem")), EPERM, "unlink")
        assertErrno(FS.check(Glibc.rename(mnt + "/.keys/server.pem", mnt + "/.keys/other.pem")), EPERM, "rename")
        assertErrno(FS.check(Glibc.mkdir(mnt + "/.keys/dir", 0o755)), EPERM, "mkdir")
        assertErrno(FS.setxattr(mnt + "/.keys/server.pem", "user.keychain.label", "x"), EPERM, "setxattr")
        assertErrno(FS.stat(mnt + "/.keys/server").errno, ENOENT, "without .pem")
        assertErrno(FS.stat(mnt + "/.keys/nosuch.pem").errno, ENOENT, "no such label")

        let audit = try h.run(["audit"]).stdout
        XCTAssertTrue(audit.contains("file-open-read"), "the key's read is in the audit log")
    }

    func testNonExtractableAndUnlabelledKeysAndRepeatedLabelsEachListed() throws {
        let hidden = try makeMaterial("hidden.example", serial: "0x2001")
        try storeTLS(hidden, label: "hidden", [kSecAttrIsExtractable as String: false])
        let first = try makeMaterial("twice.example", serial: "0x3001")
        let second = try makeMaterial("twice.example", serial: "0x3002")
        try storeTLS(first, label: "twice")
        try storeTLS(second, label: "twice")
        let bare = try makeMaterial("bare.example", serial: "0x4001")
        try withHarnessDaemon { secAdd([kSecClass as String: kSecClassKey, kSecValueRef as String: try bare.privateKey()]) }
        let klbl = try XCTUnwrap((SecKeyCopyAttributes(try bare.privateKey()) as? [String: Any])?[kSecAttrApplicationLabel as String] as? Data)
        let hex = klbl.map { String(format: "%02X", $0) }.joined()
        let secondKLBL = try XCTUnwrap((SecKeyCopyAttributes(try second.privateKey()) as? [String: Any])?[kSecAttrApplicationLabel as String] as? Data)
        let secondHex = secondKLBL.map { String(format: "%02X", $0) }.joined()

        let mnt = try mount()
        XCTAssertEqual(FS.list(mnt + "/.keys").names?.sorted(), ["%%~klbl=\(hex).pem", "twice%~klbl=\(secondHex).pem", "twice.pem"],
                       "no file for a non-extractable key; a repeated label shows its first item, the next with its klbl; no label: the key's klbl")
        XCTAssertEqual(FS.list(mnt + "/.certificates").names?.sorted(), ["hidden.pem", "twice%~slnr=3002.pem", "twice.pem"],
                       "certificates are public; the next of a label carries its serial number")
        XCTAssertEqual(FS.read(mnt + "/.keys/twice%~klbl=\(secondHex).pem").bytes.map { Data($0) },
                       try TLSMaterial.openssl(["pkey", "-in", second.keyPEM.path]))
        XCTAssertEqual(FS.read(mnt + "/.certificates/twice%~slnr=3002.pem").bytes.map { Data($0) }, second.certificatePEM)
        assertErrno(FS.stat(mnt + "/.keys/hidden.pem").errno, ENOENT, "non-extractable")
        let firstKey = try TLSMaterial.openssl(["pkey", "-in", first.keyPEM.path])
        XCTAssertEqual(FS.read(mnt + "/.keys/twice.pem").bytes.map { Data($0) }, firstKey, "the first by insertion order")
        XCTAssertEqual(FS.read(mnt + "/.certificates/twice.pem").bytes.map { Data($0) }, first.certificatePEM)
        XCTAssertEqual(FS.read(mnt + "/.keys/%%~klbl=\(hex).pem").bytes.map { Data($0) },
                       try TLSMaterial.openssl(["pkey", "-in", bare.keyPEM.path]))
        assertErrno(FS.stat(mnt + "/.keys/%%~klbl=\(hex.lowercased()).pem").errno, ENOENT, "lower-case hex is not canonical")
    }

    func testLockMakesTheKeyVanish() throws {
        let tls = try makeMaterial("locked.example")
        try storeTLS(tls, label: "server")
        let mnt = try mount()
        XCTAssertNotNil(FS.read(mnt + "/.keys/server.pem").bytes)
        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        assertErrno(FS.stat(mnt + "/.keys/server.pem").errno, ENOENT, "locked")
        assertErrno(FS.read(mnt + "/.keys/server.pem").errno, ENOENT, "locked")
        XCTAssertEqual(try h.run(["unlock-keychain"], input: passphrase + "\n").status, 0)
        XCTAssertNotNil(FS.read(mnt + "/.keys/server.pem").bytes, "back after unlock")
    }
}
