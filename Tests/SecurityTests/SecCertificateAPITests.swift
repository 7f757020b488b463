import Foundation
import KeychainTestSupport
import Security
import XCTest

/// `SecCertificate` without the keychain, on certificates made by `openssl req -x509` in a
/// directory removed after each test.
final class SecCertificateAPITests: XCTestCase {
    var dir: URL!

    override func setUp() {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("kcfs-cert-\(getpid())-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: dir)
    }

    @discardableResult
    func openssl(_ args: [String]) throws -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, "openssl \(args.joined(separator: " "))")
        return data
    }

    /// A self-signed certificate (DER) and its key's SubjectPublicKeyInfo (DER).
    func makeCertificate(_ keyOptions: [String], subject: String, serial: String) throws -> (cert: Data, spki: Data) {
        let key = dir.appendingPathComponent("key.pem").path, cert = dir.appendingPathComponent("cert.der").path
        try openssl(["req", "-x509", "-newkey"] + keyOptions + ["-nodes", "-keyout", key, "-outform", "DER", "-out", cert,
                                                               "-subj", subject, "-days", "1", "-set_serial", serial])
        let spki = try openssl(["pkey", "-in", key, "-pubout", "-outform", "DER"])
        return (try Data(contentsOf: URL(fileURLWithPath: cert)), spki)
    }

    func spkiP256(_ point: Data) -> Data {
        Data([0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
              0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00]) + point
    }

    func testECCertificateGivesItsNamesSerialAndKey() throws {
        let (der, spki) = try makeCertificate(["ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
                                              subject: "/O=Example Org/CN=server.example", serial: "0x8badf00d")
        let cert = try XCTUnwrap(SecCertificateCreateWithData(nil, der as CFData))
        XCTAssertEqual(SecCertificateCopyData(cert) as Data, der)
        XCTAssertEqual(SecCertificateCopySubjectSummary(cert) as String?, "server.example")
        var cn: CFString?
        XCTAssertEqual(SecCertificateCopyCommonName(cert, &cn), errSecSuccess)
        XCTAssertEqual(cn as String?, "server.example")
        var error: Unmanaged<CFError>?
        XCTAssertEqual(SecCertificateCopySerialNumberData(cert, &error) as Data?, Data([0x00, 0x8b, 0xad, 0xf0, 0x0d]),
                       "the INTEGER's content octets, with the zero that keeps it positive")
        let key = try XCTUnwrap(SecCertificateCopyKey(cert))
        let point = try XCTUnwrap(SecKeyCopyExternalRepresentation(key, &error) as Data?)
        XCTAssertEqual(spkiP256(point), spki, "the certificate's key is the one openssl made")
        XCTAssertEqual(SecCertificateCreateWithData(nil, der as CFData), cert)
    }

    func testRSACertificateWithoutCommonNameIsSummarisedByItsUnit() throws {
        let (der, spki) = try makeCertificate(["rsa:2048"], subject: "/O=Example Org/OU=Build Farm", serial: "7")
        let cert = try XCTUnwrap(SecCertificateCreateWithData(nil, der as CFData))
        XCTAssertEqual(SecCertificateCopySubjectSummary(cert) as String?, "Build Farm")
        var cn: CFString? = "stale" as CFString
        XCTAssertEqual(SecCertificateCopyCommonName(cert, &cn), errSecSuccess)
        XCTAssertNil(cn)
        var error: Unmanaged<CFError>?
        XCTAssertEqual(SecCertificateCopySerialNumberData(cert, &error) as Data?, Data([7]))
        let key = try XCTUnwrap(SecCertificateCopyKey(cert))
        XCTAssertEqual(SecKeyGetBlockSize(key), 256)
        let pkcs1 = try XCTUnwrap(SecKeyCopyExternalRepresentation(key, &error) as Data?)
        XCTAssertTrue(spki.range(of: pkcs1) != nil, "the PKCS#1 key is inside openssl's SubjectPublicKeyInfo")
    }

    func testNotACertificateGivesNil() throws {
        let (der, _) = try makeCertificate(["ec", "-pkeyopt", "ec_paramgen_curve:P-256"], subject: "/CN=x", serial: "1")
        XCTAssertNil(SecCertificateCreateWithData(nil, Data("not a certificate".utf8) as CFData))
        XCTAssertNil(SecCertificateCreateWithData(nil, Data() as CFData))
        XCTAssertNil(SecCertificateCreateWithData(nil, der.prefix(der.count - 1) as CFData), "truncated")
        XCTAssertNil(SecCertificateCreateWithData(nil, (der + Data([0])) as CFData), "trailing bytes")
        let pem = "-----BEGIN CERTIFICATE-----\n" + der.base64EncodedString() + "\n-----END CERTIFICATE-----\n"
        XCTAssertNil(SecCertificateCreateWithData(nil, Data(pem.utf8) as CFData), "PEM is not DER")
    }
}
