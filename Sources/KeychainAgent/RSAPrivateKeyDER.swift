import KeychainCrypto

/// An RSA key from ssh-add (n, e, d, iqmp, p, q) as the vault keeps it: Apple's external
/// representation, the PKCS#1 `RSAPrivateKey` DER (RFC 8017 A.1.2), which also needs the CRT
/// exponents d mod (p-1) and d mod (q-1) that SSH does not send. Everything is computed and
/// written in guarded memory; the agent links no bignum library, so the two remainders are a
/// bitwise long division whose subtraction is chosen by mask, not by a branch on the secret.
enum RSAPrivateKeyDER {
    /// - Parameters: the key's fields as big-endian magnitudes, the private ones in `body`.
    /// - Throws: `CryptoError` without guarded memory; `AgentRefusal.unsupportedKey` for a p or
    ///   q that is not an odd number above 1.
    static func encode(modulus: [UInt8], exponent: [UInt8], body: UnsafeRawBufferPointer,
                       d: Range<Int>, iqmp: Range<Int>, p: Range<Int>, q: Range<Int>) throws -> SecureBytes {
        let dBytes = UnsafeRawBufferPointer(rebasing: body[d])
        let pBytes = UnsafeRawBufferPointer(rebasing: body[p]), qBytes = UnsafeRawBufferPointer(rebasing: body[q])
        let dp = try remainder(dBytes, byOneLessThan: pBytes)
        defer { dp.wipe() }
        let dq = try remainder(dBytes, byOneLessThan: qBytes)
        defer { dq.wipe() }
        let fields: [UnsafeRawBufferPointer] = [UnsafeRawBufferPointer(start: nil, count: 0)]  // version 0
        return try dp.withUnsafeBytes { dpBytes in
            try dq.withUnsafeBytes { dqBytes in
                try modulus.withUnsafeBytes { n in
                    try exponent.withUnsafeBytes { e in
                        try sequence(of: fields + [n, e, dBytes, pBytes, qBytes, dpBytes, dqBytes,
                                                   UnsafeRawBufferPointer(rebasing: body[iqmp])])
                    }
                }
            }
        }
    }

    /// `a mod (m - 1)` for an odd `m` > 1, as many bytes as `m`.
    static func remainder(_ a: UnsafeRawBufferPointer, byOneLessThan m: UnsafeRawBufferPointer) throws -> SecureBytes {
        guard let last = m.last, last & 1 == 1, last > 1 || m.dropLast().contains(where: { $0 != 0 }) else {
            throw AgentRefusal.unsupportedKey
        }
        // m is odd, so m - 1 only clears its lowest bit.
        let divisor = try SecureBytes(copying: m)
        defer { divisor.wipe() }
        divisor.withUnsafeMutableBytes { $0[$0.count - 1] &= 0xFE }
        // One byte more than the divisor, so the doubled remainder never overflows.
        let r = try SecureBytes(count: m.count + 1)
        let difference = try SecureBytes(count: m.count + 1)
        defer { difference.wipe() }
        divisor.withUnsafeBytes { div in
            r.withUnsafeMutableBytes { rem in
                difference.withUnsafeMutableBytes { diff in
                    for byte in a {
                        for shift in stride(from: 7, through: 0, by: -1) {
                            // rem = rem * 2 + the next bit of a
                            var carry = (byte >> UInt8(shift)) & 1
                            for i in stride(from: rem.count - 1, through: 0, by: -1) {
                                let next = rem[i] >> 7
                                rem[i] = rem[i] << 1 | carry
                                carry = next
                            }
                            // diff = rem - div; keep it when nothing was borrowed (rem >= div)
                            var borrow: UInt16 = 0
                            for i in stride(from: rem.count - 1, through: 0, by: -1) {
                                let j = i - 1  // div is one byte shorter, aligned at the end
                                let subtrahend = UInt16(j >= 0 ? div[j] : 0) + borrow
                                let value = UInt16(rem[i]) &- subtrahend
                                diff[i] = UInt8(truncatingIfNeeded: value)
                                borrow = (value >> 8) & 1
                            }
                            let keep = UInt8(truncatingIfNeeded: 0 &- (1 &- borrow))  // 0xFF when rem >= div
                            for i in 0..<rem.count { rem[i] = (diff[i] & keep) | (rem[i] & ~keep) }
                        }
                    }
                }
            }
        }
        defer { r.wipe() }
        return try r.slice(1..<r.count)
    }

    /// DER `SEQUENCE { INTEGER ... }` of non-negative magnitudes (an empty one is 0).
    static func sequence(of integers: [UnsafeRawBufferPointer]) throws -> SecureBytes {
        let contents = integers.reduce(0) { $0 + elementLength(integerLength($1)) }
        let out = try SecureBytes(count: elementLength(contents))
        out.withUnsafeMutableBytes { buffer in
            var at = 0
            func put(_ byte: UInt8) { buffer[at] = byte; at += 1 }
            func header(_ tag: UInt8, _ length: Int) {
                put(tag)
                if length < 0x80 { put(UInt8(length)) } else if length < 0x100 { put(0x81); put(UInt8(length)) } else {
                    put(0x82); put(UInt8(length >> 8)); put(UInt8(length & 0xFF))
                }
            }
            header(0x30, contents)
            for integer in integers {
                let magnitude = integer.drop { $0 == 0 }
                header(0x02, integerLength(integer))
                if magnitude.first.map({ $0 & 0x80 != 0 }) ?? true { put(0) }  // a sign byte, or the value 0
                for byte in magnitude { put(byte) }
            }
        }
        return out
    }

    /// Bytes of an INTEGER's contents: the magnitude without leading zeros, and a zero byte in
    /// front when its top bit is set (or for the value 0).
    private static func integerLength(_ magnitude: UnsafeRawBufferPointer) -> Int {
        let trimmed = magnitude.drop { $0 == 0 }
        return trimmed.count + (trimmed.first.map { $0 & 0x80 != 0 } ?? true ? 1 : 0)
    }

    /// Bytes of a whole element (tag, length, contents) with `contents` bytes; lengths up to 65,535.
    private static func elementLength(_ contents: Int) -> Int {
        1 + (contents < 0x80 ? 1 : contents < 0x100 ? 2 : 3) + contents
    }
}
