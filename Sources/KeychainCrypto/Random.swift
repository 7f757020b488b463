import CSodium

/// Non-secret random bytes (nonces, salts, identifiers) from `randombytes_buf`.
public func randomBytes(_ count: Int) -> [UInt8] {
    Sodium.ensure()
    var out = [UInt8](repeating: 0, count: count)
    out.withUnsafeMutableBytes { if count > 0 { randombytes_buf($0.baseAddress!, count) } }
    return out
}
