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
