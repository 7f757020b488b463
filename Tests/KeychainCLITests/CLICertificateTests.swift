import Foundation
import KeychainTestSupport
import XCTest

/// `import`, `find-certificate`, `find-identity` and `export` of keys and certificates, as
/// macOS `security` has them: the real binary and daemon, keys and certificates made by
/// `openssl` in the harness's scratch directory (removed with it).
final class CLICertificateTests: XCTestCase {
    var h: CLIHarness!

    override func setUpWithError() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") else { throw XCTSkip("no /usr/bin/openssl") }
        h = try CLIHarness()
        try h.createVault()
    }

    override func tearDown() {
        h?.tearDown()
        h = nil
        super.tearDown()
    }

    func path(_ name: String) -> String { h.dir + "/" + name }

    @discardableResult
    func openssl(_ args: [String]) throws -> Data { try TLSMaterial.openssl(args) }

    /// A P-256 key (`NAME.key`, PKCS#8 PEM) and a self-signed certificate (`NAME.crt`, PEM)
    /// for `commonName`, with an e-mail address in the subject.
    func makePair(_ name: String, commonName: String, email: String = "ops@example.org") throws {
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", path(name + ".key"), "-out", path(name + ".crt"), "-days", "2",
                     "-subj", "/O=keychainfs tests/CN=\(commonName)/emailAddress=\(email)"])
    }

    func contents(_ name: String) throws -> String { try String(contentsOfFile: path(name), encoding: .utf8) }

    func sha1(_ name: String) throws -> String {
        // "sha1 Fingerprint=AB:CD:..." -> "ABCD..."
        let line = String(decoding: try openssl(["x509", "-in", path(name), "-noout", "-fingerprint", "-sha1"]), as: UTF8.self)
        return String(line.split(separator: "=").last!).replacingOccurrences(of: ":", with: "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func publicPEM(_ name: String) throws -> String {
        String(decoding: try openssl(["pkey", "-in", path(name), "-pubout"]), as: UTF8.self)
    }

    @discardableResult
    func assertRun(_ args: [String], status: Int32 = 0, stdout: String? = nil,
                   file: StaticString = #filePath, line: UInt = #line) throws -> CLIHarness.Result {
        let r = try h.run(args, file: file, line: line)
        XCTAssertEqual(r.status, status, "\(args): \(r)", file: file, line: line)
        if let stdout { XCTAssertEqual(r.stdout, stdout, "\(args)", file: file, line: line) }
        return r
    }

    // MARK: import, find, export

    func testImportedKeyAndCertificateAreFoundAndExportedAsOpenSSLWritesThem() throws {
        let cn = "web-\(UUID().uuidString.prefix(6)).example"
        try makePair("web", commonName: cn)
        try assertRun(["import", path("web.key")], stdout: "1 key imported.\n")
        try assertRun(["import", path("web.crt"), "-t", "cert", "-f", "pemseq"], stdout: "1 certificate imported.\n")

        let found = try assertRun(["find-certificate", "-c", String(cn.prefix(8))])
        XCTAssertTrue(found.stdout.contains("\"labl\"<blob>=\"\(cn)\""), found.stdout)
        XCTAssertTrue(found.stdout.hasPrefix("keychain: \"\(h.vault)\"\nclass: \"cert\"\n"), found.stdout)
        try assertRun(["find-certificate", "-c", cn, "-p"], stdout: try contents("web.crt"))
        let hashes = try assertRun(["find-certificate", "-c", cn, "-Z"])
        XCTAssertTrue(hashes.stdout.contains("\nSHA-1 hash: \(try sha1("web.crt"))\n"), hashes.stdout)
        XCTAssertTrue(hashes.stdout.hasPrefix("SHA-256 hash: "), hashes.stdout)
        try assertRun(["find-certificate", "-e", "OPS@example.org", "-m", "-p"],
                      stdout: "email addresses: ops@example.org\n" + (try contents("web.crt")))

        try assertRun(["find-identity", "-v"], stdout: "  1) \(try sha1("web.crt")) \"\(cn)\"\n     1 valid identities found\n")
        try assertRun(["find-identity", "-p", "ssl-server"], stdout: """
              Matching identities
              1) \(try sha1("web.crt")) "\(cn)"
                 1 identities found

              Valid identities only
              1) \(try sha1("web.crt")) "\(cn)"
                 1 valid identities found

            """)

        try assertRun(["export", "-t", "certs", "-f", "pemseq", "-o", path("out.pem")], stdout: "")
        XCTAssertEqual(try contents("out.pem"), try contents("web.crt"))
        try assertRun(["export", "-t", "pubKeys"], stdout: try publicPEM("web.key"))
        let der = try openssl(["x509", "-in", path("web.crt"), "-outform", "DER"])
        try assertRun(["export", "-t", "certs", "-f", "x509", "-o", path("out.der")])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path("out.der"))), der, "x509 without -p is DER")
    }

    func testOneFileWithKeyAndCertificateIsOneIdentity() throws {
        try makePair("id", commonName: "identity.example")
        try (try contents("id.key") + contents("id.crt")).write(toFile: path("id.pem"), atomically: true, encoding: .utf8)
        try assertRun(["import", path("id.pem")], stdout: "1 identity imported.\n")
        try assertRun(["find-identity", "-v"], stdout: "  1) \(try sha1("id.crt")) \"identity.example\"\n     1 valid identities found\n")
        // The key took its certificate's label.
        try assertRun(["export", "-t", "pubKeys", "-l", "identity.example"], stdout: try publicPEM("id.key"))
    }

    /// Re-importing a file exits 45 (as security does); `--replace` replaces what it brought:
    /// here a key imported non-extractable by mistake (`-x`) becomes extractable, and the
    /// label changes, with no second item.
    func testImportReplaceReplacesWhatTheFileBrought() throws {
        try makePair("srv", commonName: "server.example")
        try (try contents("srv.key") + contents("srv.crt")).write(toFile: path("srv.pem"), atomically: true, encoding: .utf8)
        try assertRun(["import", path("srv.pem"), "-x"], stdout: "1 identity imported.\n")
        try assertRun(["export", "-t", "privKeys"], status: 28, stdout: "")  // non-extractable
        let again = try assertRun(["import", path("srv.pem")], status: 45, stdout: "")
        XCTAssertTrue(again.stderr.contains(Sentence.duplicate), again.stderr)
        try assertRun(["import", path("srv.pem"), "--replace", "-l", "web"], stdout: "1 identity imported.\n2 items replaced.\n")
        try assertRun(["export", "-t", "privKeys"], status: 84, stdout: "")  // extractable now: refused for want of a passphrase
        let dump = try assertRun(["dump-keychain", "--json"])
        let items = (try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [[String: Any]]) ?? []
        XCTAssertEqual(items.map { $0["class"] as? String }, ["cert", "keys"], "one certificate, one key: \(dump.stdout)")
        XCTAssertEqual(items.map { ($0["attributes"] as? [String: Any])?["labl"] as? String }, ["web", "web"])
        let extractable = items.last.flatMap { ($0["attributes"] as? [String: Any])?["extr"] }
        XCTAssertTrue((extractable as? Bool) == true || (extractable as? Int) == 1, dump.stdout)
        // A file with a new key beside a stored certificate: the key is added, the certificate replaced.
        try assertRun(["import", path("srv.crt"), "--replace"], stdout: "1 certificate imported.\n1 item replaced.\n")
        try assertRun(["find-identity", "-v"], stdout: "  1) \(try sha1("srv.crt")) \"web\"\n     1 valid identities found\n")
        try assertRun(["import", path("srv.pem"), "--keep-newer"], status: 2, stdout: "")
    }

    func testEveryKeyFormatImportsAsTheSameKey() throws {
        try openssl(["genrsa", "-out", path("rsa.pem"), "2048"])
        try openssl(["rsa", "-in", path("rsa.pem"), "-traditional", "-out", path("rsa1.pem")])  // PKCS#1 "RSA PRIVATE KEY"
        try openssl(["ecparam", "-name", "secp384r1", "-genkey", "-out", path("sec1.pem")])     // "EC PARAMETERS" + SEC 1
        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-521", "-out", path("p521.pem")])
        try openssl(["pkey", "-in", path("p521.pem"), "-outform", "DER", "-out", path("p521.der")])  // PKCS#8 DER
        try openssl(["ec", "-in", path("sec1.pem"), "-pubout", "-out", path("sec1.pub")])
        XCTAssertTrue(try contents("rsa1.pem").hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
        XCTAssertTrue(try contents("sec1.pem").hasPrefix("-----BEGIN EC PARAMETERS-----"))
        for (file, label) in [("rsa1.pem", "rsa"), ("sec1.pem", "sec1"), ("p521.der", "p521")] {
            try assertRun(["import", path(file), "-t", "priv", "-l", label], stdout: "1 key imported.\n")
        }
        try assertRun(["export", "-t", "pubKeys", "-l", "rsa"], stdout: try publicPEM("rsa.pem"))
        try assertRun(["export", "-t", "pubKeys", "-l", "sec1"], stdout: try publicPEM("sec1.pem"))
        try assertRun(["export", "-t", "pubKeys", "-l", "p521"], stdout: try publicPEM("p521.pem"))
        // A public key file is a public key item; exported, it is the same text.
        try assertRun(["import", path("sec1.pub"), "-t", "pub", "-l", "sec1-public"], stdout: "1 key imported.\n")
        try assertRun(["export", "-t", "pubKeys", "-l", "sec1-public", "-f", "openssl", "-p"], stdout: try contents("sec1.pub"))
        // The same key again is a duplicate.
        let again = try assertRun(["import", path("p521.pem")], status: 45)
        XCTAssertTrue(again.stderr.contains(Sentence.duplicate), again.stderr)
    }

    func testPrivateKeysAreNotExported() throws {
        try makePair("sealed", commonName: "sealed.example")
        try makePair("open", commonName: "open.example")
        try assertRun(["import", path("sealed.key"), "-x", "-l", "sealed"], stdout: "1 key imported.\n")
        try assertRun(["import", path("open.key"), "-l", "open"], stdout: "1 key imported.\n")
        for type in ["privKeys", "allKeys", "all"] {
            let r = try assertRun(["export", "-t", type, "-l", "sealed"], status: 28, stdout: "")
            XCTAssertTrue(r.stderr.hasPrefix("keychainfs: The contents of this item cannot be retrieved.\n"), r.stderr)
        }
        let open = try assertRun(["export", "-t", "privKeys", "-l", "open", "-o", path("never.pem")], status: 84, stdout: "")
        XCTAssertTrue(open.stderr.hasPrefix("keychainfs: Passphrase is required for import/export.\n"), open.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("never.pem")))
        try assertRun(["export", "-t", "privKeys", "-P", "x"], status: 2, stdout: "")
        // The public half of the sealed key is public.
        try assertRun(["export", "-t", "pubKeys", "-l", "sealed"], stdout: try publicPEM("sealed.key"))
    }

    func testBadFilesAreRefusedAndStoreNothing() throws {
        try makePair("good", commonName: "good.example")
        try Data("not a key at all\n".utf8).write(to: URL(fileURLWithPath: path("garbage.bin")))
        let garbage = try assertRun(["import", path("garbage.bin")], status: 93, stdout: "")
        XCTAssertEqual(garbage.stderr, "keychainfs: Unable to decode the provided data.\nkeychainfs: nothing was imported: "
                       + "\(path("garbage.bin")) is not a keychainfs backup (or it is damaged), nor a key or certificate file\n")
        // A good certificate followed by a block that does not decode: neither is kept.
        let broken = try contents("good.crt") + "-----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
        try broken.write(toFile: path("broken.pem"), atomically: true, encoding: .utf8)
        let r = try assertRun(["import", path("broken.pem")], status: 2, stdout: "")
        XCTAssertTrue(r.stderr.contains("private key does not decode"), r.stderr)
        try openssl(["pkey", "-in", path("good.key"), "-aes256", "-passout", "pass:secret", "-out", path("encrypted.pem")])
        let encrypted = try assertRun(["import", path("encrypted.pem")], status: 2, stdout: "")
        XCTAssertTrue(encrypted.stderr.contains("encrypted private key"), encrypted.stderr)
        try assertRun(["import", path("good.key"), "-t", "cert"], status: 2, stdout: "")
        try assertRun(["import", path("good.key"), "-f", "pkcs12"], status: 2, stdout: "")
        try assertRun(["import", path("good.key"), "-T", "/usr/bin/true"], status: 2, stdout: "")
        try assertRun(["import", path("missing.pem")], status: 220, stdout: "")
        let none = try assertRun(["find-certificate", "-a"], status: 44, stdout: "")
        XCTAssertEqual(none.stderr, Sentence.notFound)
        try assertRun(["export", "-t", "pubKeys"], status: 44, stdout: "")

        // A file whose certificate is already stored: its key is taken back too.
        try assertRun(["import", path("good.crt")], stdout: "1 certificate imported.\n")
        try (try contents("good.key") + contents("good.crt")).write(toFile: path("both.pem"), atomically: true, encoding: .utf8)
        let duplicate = try assertRun(["import", path("both.pem")], status: 45, stdout: "")
        XCTAssertTrue(duplicate.stderr.contains(Sentence.duplicate), duplicate.stderr)
        try assertRun(["export", "-t", "pubKeys"], status: 44, stdout: "")
        try assertRun(["find-identity", "-v"], stdout: "     0 valid identities found\n")
    }

    func testIdentitiesOutsideTheirValidityPeriodAreListedButNotValid() throws {
        // openssl 3.0 cannot date a certificate in the past; Python's cryptography can.
        let script = """
        import sys, datetime
        from cryptography import x509
        from cryptography.x509.oid import NameOID
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        for name, start, end in [("expired", datetime.datetime(2020, 1, 1), datetime.datetime(2020, 1, 2)),
                                 ("future", datetime.datetime(2100, 1, 1), datetime.datetime(2100, 1, 2))]:
            key = ec.generate_private_key(ec.SECP256R1())
            subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name + ".example")])
            cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
                    .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
                    .sign(key, hashes.SHA256()))
            with open(sys.argv[1] + "/" + name + ".pem", "wb") as f:
                f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
                f.write(cert.public_bytes(serialization.Encoding.PEM))
        """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = ["-c", script, h.dir]
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw XCTSkip("python3 with cryptography is needed to date certificates") }
        try makePair("now", commonName: "now.example")
        try (try contents("now.key") + contents("now.crt")).write(toFile: path("now.pem"), atomically: true, encoding: .utf8)
        for name in ["expired", "future", "now"] {
            try assertRun(["import", path(name + ".pem")], stdout: "1 identity imported.\n")
        }
        let (expired, future, now) = (try sha1("expired.pem"), try sha1("future.pem"), try sha1("now.pem"))
        try assertRun(["find-identity"], stdout: """
              Matching identities
              1) \(expired) "expired.example" (CSSMERR_TP_CERT_EXPIRED)
              2) \(future) "future.example" (CSSMERR_TP_CERT_NOT_VALID_YET)
              3) \(now) "now.example"
                 3 identities found

              Valid identities only
              1) \(now) "now.example"
                 1 valid identities found

            """)
        try assertRun(["find-identity", "-v", "-s", "now.example"], stdout: "  1) \(now) \"now.example\"\n     1 valid identities found\n")
        let json = try assertRun(["find-identity", "--json"])
        let list = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]], json.stdout)
        XCTAssertEqual(list.map { $0["label"] as? String }, ["expired.example", "future.example", "now.example"])
        XCTAssertEqual(list.map { $0["valid"] as? Bool }, [false, false, true])
        XCTAssertEqual(list.last?["sha1"] as? String, now)
        try assertRun(["find-identity", "-p", "no-such-policy"], status: 2, stdout: "")
        let certs = try assertRun(["find-certificate", "-a", "-c", "example", "--json"])
        let found = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(certs.stdout.utf8)) as? [[String: Any]], certs.stdout)
        XCTAssertEqual(found.count, 3)
        XCTAssertEqual(found.compactMap { $0["sha1"] as? String }, [expired, future, now])
    }

    func testDeleteCertificateAndDeleteIdentityTakeOneByNameOrHash() throws {
        for name in ["alpha", "beta"] {
            try makePair(name, commonName: "\(name).delete.example")
            try (try contents(name + ".key") + contents(name + ".crt")).write(toFile: path(name + ".pem"), atomically: true, encoding: .utf8)
            try assertRun(["import", path(name + ".pem")], stdout: "1 identity imported.\n")
        }
        let ambiguous = try assertRun(["delete-identity", "-c", "delete.example"], status: 2, stdout: "")
        XCTAssertTrue(ambiguous.stderr.hasPrefix("keychainfs: -c \"delete.example\" matches 2 certificates"), ambiguous.stderr)
        try assertRun(["delete-certificate"], status: 2, stdout: "")
        try assertRun(["delete-identity", "-c", "gamma"], status: 44, stdout: "")

        // delete-identity: the certificate and its key.
        try assertRun(["delete-identity", "-Z", try sha1("alpha.crt").lowercased()], stdout: "")
        try assertRun(["find-identity", "-v"], stdout: "  1) \(try sha1("beta.crt")) \"beta.delete.example\"\n     1 valid identities found\n")
        try assertRun(["export", "-t", "pubKeys"], stdout: try publicPEM("beta.key"))  // alpha's key is gone
        // delete-certificate: the certificate only; the key stays, so no identity is left.
        try assertRun(["delete-certificate", "-c", "beta", "-t"], stdout: "")
        try assertRun(["find-certificate", "-a"], status: 44, stdout: "")
        try assertRun(["export", "-t", "pubKeys"], stdout: try publicPEM("beta.key"))
        try assertRun(["find-identity", "-v"], stdout: "     0 valid identities found\n")
    }

    func testBackupFormsOfImportAndExportStillWork() throws {
        try assertRun(["add-generic-password", "-s", "svc", "-a", "acct", "-w", "-"])
        let r = try h.run(["export", "--out", path("backup.kcb"), "--kdf", "interactive"], input: "backup pass\n")
        XCTAssertEqual(r.status, 0, "\(r)")
        let back = try h.run(["import", path("backup.kcb"), "--replace"], input: "backup pass\n")
        XCTAssertEqual(back.status, 0, "\(back)")
        XCTAssertEqual(back.stdout, "added 0, replaced 1, skipped 0\n")
        try assertRun(["export"], status: 2, stdout: "")
    }

    func testTheThinCommandLinksNoLibcrypto() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ldd")
        p.arguments = [CLIHarness.binary]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertFalse(text.contains("libcrypto"), text)
    }
}
