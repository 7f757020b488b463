import CommonCrypto

/// `keychainfs-bench commoncrypto [--seconds T] [--bytes N]`: `CC_SHA256` and `CCCrypt`
/// (AES-256-CBC, PKCS#7 padding, a fresh cryptor per call as CCCrypt makes one) over one N-byte
/// buffer (default 16384), each for T seconds (default 3), one call per buffer; what
/// `openssl speed -bytes N sha256` and `-evp aes-256-cbc` measure with their EVP calls.
/// Prints `bytes= seconds= sha256_calls= sha256_mbps= sha256_cpu_mbps= aes_calls= aes_mbps=
/// aes_cpu_mbps=` (MB = 10^6 bytes, openssl speed's unit): rates by wall-clock time and by this
/// thread's CPU time, which is what `openssl speed` divides by unless given `-elapsed`.
func commonCryptoMode(_ args: [String]) {
    var seconds = 3.0, bytes = 16384
    var i = 0
    while i < args.count {
        let value = i + 1 < args.count ? args[i + 1] : ""
        switch args[i] {
        case "--seconds": seconds = Double(value) ?? 3
        case "--bytes": bytes = Int(value) ?? 16384
        default: fail("commoncrypto: unknown option \(args[i])")
        }
        i += 2
    }
    guard seconds > 0, bytes > 0 else { fail("commoncrypto: --seconds and --bytes take positive numbers") }
    let input = [UInt8]((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
    var digest = [UInt8](repeating: 0, count: Int(CC_SHA256_DIGEST_LENGTH))
    let key = [UInt8]((0..<kCCKeySizeAES256).map { UInt8($0) })
    let iv = [UInt8](repeating: 0x24, count: kCCBlockSizeAES128)
    var output = [UInt8](repeating: 0, count: bytes + kCCBlockSizeAES128)
    let capacity = output.count

    var shaCalls = 0
    var deadline = monotonic() + seconds
    var started = monotonic()
    var cpu = threadCPUSeconds()
    while monotonic() < deadline {
        guard CC_SHA256(input, CC_LONG(bytes), &digest) != nil else { fail("commoncrypto: CC_SHA256 failed") }
        shaCalls += 1
    }
    let shaTime = monotonic() - started
    let shaCPU = threadCPUSeconds() - cpu

    var aesCalls = 0
    var moved = 0
    deadline = monotonic() + seconds
    started = monotonic()
    cpu = threadCPUSeconds()
    while monotonic() < deadline {
        let status = CCCrypt(CCOperation(kCCEncrypt), CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding),
                             key, key.count, iv, input, bytes, &output, capacity, &moved)
        guard status == kCCSuccess else { fail("commoncrypto: CCCrypt returned \(status)") }
        aesCalls += 1
    }
    let aesTime = monotonic() - started
    let aesCPU = threadCPUSeconds() - cpu
    let mbps = { (calls: Int, time: Double) in Double(calls * bytes) / time / 1e6 }
    emit("bytes=\(bytes) seconds=\(plain(seconds, 1)) sha256_calls=\(shaCalls) sha256_mbps=\(plain(mbps(shaCalls, shaTime), 1)) "
         + "sha256_cpu_mbps=\(plain(mbps(shaCalls, shaCPU), 1)) aes_calls=\(aesCalls) aes_mbps=\(plain(mbps(aesCalls, aesTime), 1)) "
         + "aes_cpu_mbps=\(plain(mbps(aesCalls, aesCPU), 1)) check=\(digest[0] ^ output[moved - 1])")
}
