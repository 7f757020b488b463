import CSodium

/// BLAKE2b (`crypto_generichash`), keyed or not. Used for blind index tokens and key derivation.
public enum KeyedHash {
    /// Hashes `message` with an optional key to `length` bytes (16...64).
    public static func hash(_ message: [UInt8], key: SecureBytes?, length: Int = 32) -> [UInt8] {
        message.withUnsafeBytes { hash($0, key: key, length: length) }
    }

    public static func hash(_ message: UnsafeRawBufferPointer, key: SecureBytes?, length: Int = 32) -> [UInt8] {
        Sodium.ensure()
        precondition(length >= Int(crypto_generichash_BYTES_MIN) && length <= Int(crypto_generichash_BYTES_MAX))
        var out = [UInt8](repeating: 0, count: length)
        let run: (UnsafePointer<UInt8>?, Int) -> Int32 = { k, klen in
            out.withUnsafeMutableBufferPointer { o in
                crypto_generichash(o.baseAddress!, length,
                                   message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count),
                                   k, klen)
            }
        }
        let rc: Int32
        if let key {
            rc = key.withUnsafeBytes { run($0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count) }
        } else {
            rc = run(nil, 0)
        }
        precondition(rc == 0)
        return out
    }

    /// Replaces `chain` (32 bytes) with the keyed BLAKE2b-256 of `chain` followed by `message`,
    /// the step of a hash chain, without building the concatenation.
    public static func extend(_ chain: inout [UInt8], with message: UnsafeRawBufferPointer, key: SecureBytes) {
        Sodium.ensure()
        precondition(chain.count == 32)
        // The state type is 64-byte aligned in C, so Swift sees it as opaque: allocate it by size.
        let raw = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        defer {
            sodium_memzero(raw, crypto_generichash_statebytes())  // it held the key
            raw.deallocate()
        }
        let state = OpaquePointer(raw)
        let rc = key.withUnsafeBytes { k in
            chain.withUnsafeMutableBufferPointer { c -> Int32 in
                var rc = crypto_generichash_init(state, k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count, 32)
                rc |= crypto_generichash_update(state, c.baseAddress!, 32)
                rc |= crypto_generichash_update(state, message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count))
                rc |= crypto_generichash_final(state, c.baseAddress!, 32)
                return rc
            }
        }
        precondition(rc == 0)
    }

    /// Derives a 32-byte guarded key from `key` and a context label; a keyed BLAKE2b whose output
    /// never leaves guarded memory. - Throws: `CryptoError.allocationFailed`.
    public static func deriveKey(from key: SecureBytes, context: [UInt8]) throws -> SecureBytes {
        Sodium.ensure()
        let out = try SecureBytes(count: 32)
        let rc = out.withUnsafeMutableBytes { o in
            key.withUnsafeBytes { k in
                context.withUnsafeBufferPointer { c in
                    crypto_generichash(o.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                                       c.baseAddress, UInt64(c.count),
                                       k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
                }
            }
        }
        precondition(rc == 0)
        return out
    }
}
