import Foundation
import KeychainProtocol
import Security
import XCTest

/// A P-256 key and a self-signed certificate for it made by `openssl req -x509` in `dir`, and
/// the key in Apple's external representation (`04 || X || Y || K`) for `SecKeyCreateWithData`.
package struct TLSMaterial {
    package let keyPEM: URL
    package let certificateDER: Data
    package let certificatePEM: Data
    /// `04 || X || Y || K`, taken from openssl's SEC1 `ECPrivateKey` DER, whose layout is fixed
    /// for a named P-256 key: the scalar at bytes 7..<39, the point in the last 65.
    package let applePrivateKey: Data

    package init(in dir: URL, commonName: String, serial: String = "0x1001") throws {
        keyPEM = dir.appendingPathComponent("key-\(serial).pem")
        let certDER = dir.appendingPathComponent("cert-\(serial).der"), certPEM = dir.appendingPathComponent("cert-\(serial).pem")
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", keyPEM.path,
                          "-outform", "DER", "-out", certDER.path, "-subj", "/O=keychainfs tests/CN=\(commonName)", "-days", "2",
                          "-set_serial", serial, "-addext", "subjectAltName=DNS:\(commonName),IP:127.0.0.1"])
        try Self.openssl(["x509", "-inform", "DER", "-in", certDER.path, "-out", certPEM.path])
        certificateDER = try Data(contentsOf: certDER)
        certificatePEM = try Data(contentsOf: certPEM)
        let sec1 = try Self.openssl(["ec", "-in", keyPEM.path, "-outform", "DER"])
        guard sec1.count == 121 else { throw CocoaError(.fileReadCorruptFile) }
        applePrivateKey = Data(sec1.suffix(65)) + Data(sec1[7..<39])
    }

    @discardableResult
    package static func openssl(_ args: [String]) throws -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw CocoaError(.executableLoad) }
        return data
    }

    /// The private key as an in-process `SecKey`.
    package func privateKey() throws -> SecKey {
        var error: Unmanaged<CFError>?
        guard let key = SecKeyCreateWithData(applePrivateKey as CFData, [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom,
                                                                         kSecAttrKeyClass: kSecAttrKeyClassPrivate] as CFDictionary, &error)
        else { throw error!.takeRetainedValue() as Error }
        return key
    }

    package func certificate() throws -> SecCertificate {
        guard let c = SecCertificateCreateWithData(nil, certificateDER as CFData) else { throw CocoaError(.fileReadCorruptFile) }
        return c
    }
}

extension MountTestCase {
    /// Points the Security module of this process at the harness's daemon for `body`.
    package func withHarnessDaemon<R>(_ body: () throws -> R) throws -> R {
        let saved = ProcessInfo.processInfo.environment["KEYCHAINFS_SOCKET"]
        let socket = h.runtimeDir + "/" + URL(fileURLWithPath: Paths.socket(forVault: h.vault)).lastPathComponent
        setenv("KEYCHAINFS_SOCKET", socket, 1)
        defer { if let saved { setenv("KEYCHAINFS_SOCKET", saved, 1) } else { unsetenv("KEYCHAINFS_SOCKET") } }
        return try body()
    }

    /// SecItemAdd, retried once when the module's kept connection was to an earlier daemon.
    package func secAdd(_ attributes: [String: Any], file: StaticString = #filePath, line: UInt = #line) {
        var status = SecItemAdd(attributes as CFDictionary, nil)
        if status == errSecNotAvailable { status = SecItemAdd(attributes as CFDictionary, nil) }
        XCTAssertEqual(status, errSecSuccess, "SecItemAdd", file: file, line: line)
    }

    /// Stores the material's private key labelled `label` (with `extra` attributes) and its certificate.
    package func storeTLS(_ tls: TLSMaterial, label: String, _ extra: [String: Any] = [:]) throws {
        try withHarnessDaemon {
            var key: [String: Any] = [kSecClass as String: kSecClassKey, kSecValueRef as String: try tls.privateKey(),
                                      kSecAttrLabel as String: label]
            for (k, v) in extra { key[k] = v }
            secAdd(key)
            secAdd([kSecValueRef as String: try tls.certificate(), kSecAttrLabel as String: label])
        }
    }
}
