import Glibc
import KeychainKeys
import Security

/// `keychainfs-bench seckey [--seconds T]`: P-256 ECDSA signatures per second over a 32-byte
/// digest, (1) through the daemon with a stored non-extractable key (`SecKeyCreateRandomKey` with
/// `kSecAttrIsPermanent`, then `SecKeyCreateSignature` in a loop: one `useKey` request each) and
/// (2) in process with KeychainKeys on a key held here, as `openssl speed ecdsap256` signs.
/// Prints `daemon_rate= inproc_rate= daemon_ops= inproc_ops=`; the key is deleted after.
func seckeyMode(_ args: [String]) {
    var seconds = 3.0
    var i = 0
    while i < args.count {
        switch args[i] {
        case "--seconds": seconds = Double(i + 1 < args.count ? args[i + 1] : "") ?? 3
        default: fail("seckey: unknown option \(args[i])")
        }
        i += 2
    }
    let tag = Data("keychainfs-bench-seckey-\(getpid())".utf8)
    let params: [String: Any] = [
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
        kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: tag,
                                        kSecAttrIsExtractable as String: false],
    ]
    var error: Unmanaged<CFError>?
    guard SecKeyCreateRandomKey(params as CFDictionary, &error) != nil else { fail("seckey: SecKeyCreateRandomKey failed") }
    let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag]
    defer { SecItemDelete(query as CFDictionary) }
    var found: CFTypeRef?
    guard SecItemCopyMatching(query.merging([kSecReturnRef as String: true]) { $1 } as CFDictionary, &found) == errSecSuccess,
          let stored = found as? SecKey else { fail("seckey: the stored key does not read back") }
    let digest = Data((0..<32).map { UInt8($0) })

    var daemonOps = 0
    var deadline = monotonic() + seconds
    while monotonic() < deadline {
        guard SecKeyCreateSignature(stored, .ecdsaSignatureDigestX962SHA256, digest as CFData, &error) != nil else {
            fail("seckey: a signature through the daemon failed")
        }
        daemonOps += 1
    }

    guard let key = try? AsymmetricKey.generate(.p256) else { fail("seckey: no in-process key") }
    let bytes = Array(digest)
    var inprocOps = 0
    deadline = monotonic() + seconds
    while monotonic() < deadline {
        guard (try? key.sign(digest: bytes, hash: nil, scheme: .ecdsaX962)) != nil else { fail("seckey: an in-process signature failed") }
        inprocOps += 1
    }
    emit("seconds=\(plain(seconds, 1)) daemon_ops=\(daemonOps) daemon_rate=\(plain(Double(daemonOps) / seconds, 0)) " +
         "inproc_ops=\(inprocOps) inproc_rate=\(plain(Double(inprocOps) / seconds, 0))")
}

/// `keychainfs-bench seckey-rsa [--seconds T]`: RSA-2048 PKCS #1 v1.5 encryptions per second of
/// a 32-byte plaintext, (1) through the legacy `SecKeyEncrypt` with a public key made as RSA
/// libraries make it (`SecKeyCreateWithData` of the PKCS#1 DER, the DER length x 8 as its size)
/// and (2) with KeychainKeys in process on the same key (`AsymmetricKey.encrypt`), as
/// `openssl speed rsa2048` encrypts. Neither asks the daemon. Prints `legacy_rate= inproc_rate=
/// legacy_ops= inproc_ops=`.
func seckeyRSAMode(_ args: [String]) {
    var seconds = 3.0
    var i = 0
    while i < args.count {
        switch args[i] {
        case "--seconds": seconds = Double(i + 1 < args.count ? args[i + 1] : "") ?? 3
        default: fail("seckey-rsa: unknown option \(args[i])")
        }
        i += 2
    }
    guard let made = try? AsymmetricKey.generateRSA(bits: 2048), let pub = try? made.publicKey() else { fail("seckey-rsa: no RSA key") }
    let der = pub.publicBytes()
    var error: Unmanaged<CFError>?
    let attributes: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrKeyClass as String: kSecAttrKeyClassPublic,
                                     kSecAttrKeySizeInBits as String: der.count * 8]
    guard let key = SecKeyCreateWithData(Data(der) as CFData, attributes as CFDictionary, &error) else {
        fail("seckey-rsa: SecKeyCreateWithData failed")
    }
    let message = [UInt8](repeating: 0x42, count: 32)
    var cipher = [UInt8](repeating: 0, count: SecKeyGetBlockSize(key))

    var legacyOps = 0
    var deadline = monotonic() + seconds
    while monotonic() < deadline {
        var length = cipher.count
        guard SecKeyEncrypt(key, .PKCS1, message, message.count, &cipher, &length) == errSecSuccess else {
            fail("seckey-rsa: SecKeyEncrypt failed")
        }
        legacyOps += 1
    }

    var inprocOps = 0
    deadline = monotonic() + seconds
    while monotonic() < deadline {
        guard (try? message.withUnsafeBytes { try pub.encrypt($0, padding: .pkcs1) }) != nil else { fail("seckey-rsa: an in-process encryption failed") }
        inprocOps += 1
    }
    emit("seconds=\(plain(seconds, 1)) legacy_ops=\(legacyOps) legacy_rate=\(plain(Double(legacyOps) / seconds, 0)) " +
         "inproc_ops=\(inprocOps) inproc_rate=\(plain(Double(inprocOps) / seconds, 0))")
}
