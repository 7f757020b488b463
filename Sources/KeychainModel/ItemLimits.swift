import KeychainCrypto

/// Sizes every face of the vault agrees on, so that what one accepts the others can carry.
public enum ItemLimits {
    /// The largest secret an item holds: what a mount write may reach and an add may store.
    public static let maximumSecretLength = 16 << 20
    /// Room in a socket frame around a secret of the largest size: its attributes and framing.
    public static let frameOverhead = 1 << 20

    /// - Throws: `KeychainStatus.param` for a secret longer than `maximumSecretLength`, so that
    ///   every stored secret fits a socket frame and a mount's write buffer.
    package static func check(_ secret: SecureBytes) throws {
        guard secret.count <= maximumSecretLength else { throw KeychainStatus.param }
    }
}
