/// A public key of a type this agent serves, in SSH's encodings: Ed25519 (RFC 8709), ECDSA on
/// the NIST curves (RFC 5656) and RSA (RFC 4253 section 6.6, signed with SHA-2 as RFC 8332 asks).
public enum SSHPublicKey: Equatable, Sendable {
    /// The 32-byte public key A.
    case ed25519([UInt8])
    case ecdsa(SSHPublicKeyBlob)
    /// Exponent and modulus as big-endian magnitudes.
    case rsa(exponent: [UInt8], modulus: [UInt8])

    /// The RSA moduli this agent serves: OpenSSH refuses keys under 1024 bits and over 16384.
    public static let minimumRSABits = 1024
    public static let maximumRSABits = 16384

    /// Decodes a key blob as a client names it in SIGN_REQUEST or REMOVE_IDENTITY.
    /// - Throws: `unsupportedKeyType` for another type; `malformed`, `truncated`, `trailingBytes`.
    public init(blob: [UInt8]) throws {
        var reader = SSHWireReader(blob)
        let keyType = try reader.readText()
        if keyType == "ssh-ed25519" {
            let publicKey = try reader.readString()
            try reader.expectEnd()
            guard publicKey.count == 32 else { throw SSHAgentCodecError.malformed("an Ed25519 public key is 32 bytes") }
            self = .ed25519(publicKey)
        } else if keyType == "ssh-rsa" {
            let exponent = try reader.readPositiveMPInt()
            let modulus = try reader.readPositiveMPInt()
            try reader.expectEnd()
            try self.init(rsaExponent: exponent, modulus: modulus)
        } else {
            self = .ecdsa(try SSHPublicKeyBlob(blob: blob))
        }
    }

    /// The key of a PKCS#1 `RSAPublicKey` (SEQUENCE { modulus INTEGER, publicExponent INTEGER }),
    /// the form the vault keeps a stored RSA key's public half in.
    /// - Throws: `malformed` for other bytes or a modulus under `minimumRSABits`.
    public init(pkcs1RSAPublicKey der: [UInt8]) throws {
        var sequence = try DERReader.sequence(der)
        let modulus = try sequence.positiveInteger()
        let exponent = try sequence.positiveInteger()
        guard sequence.isAtEnd else { throw SSHAgentCodecError.malformed("bytes after the RSA public exponent") }
        try self.init(rsaExponent: exponent, modulus: modulus)
    }

    init(rsaExponent exponent: [UInt8], modulus: [UInt8]) throws {
        guard (Self.minimumRSABits...Self.maximumRSABits).contains(Self.bitLength(modulus)) else {
            throw SSHAgentCodecError.malformed("RSA modulus not of \(Self.minimumRSABits) to \(Self.maximumRSABits) bits")
        }
        guard !exponent.isEmpty, exponent.count <= 8 else { throw SSHAgentCodecError.malformed("RSA exponent") }
        self = .rsa(exponent: exponent, modulus: modulus)
    }

    /// The key type name that starts the blob and the `authorized_keys` line.
    public var keyType: String {
        switch self {
        case .ed25519: "ssh-ed25519"
        case .ecdsa(let key): key.curve.keyType
        case .rsa: "ssh-rsa"
        }
    }

    public var blob: [UInt8] {
        switch self {
        case .ed25519(let publicKey):
            var writer = SSHWireWriter()
            writer.writeText("ssh-ed25519")
            writer.writeString(publicKey)
            return writer.bytes
        case .ecdsa(let key):
            return key.blob
        case .rsa(let exponent, let modulus):
            var writer = SSHWireWriter()
            writer.writeText("ssh-rsa")
            writer.writePositiveMPInt(exponent)
            writer.writePositiveMPInt(modulus)
            return writer.bytes
        }
    }

    /// The `authorized_keys` form: `TYPE BASE64`, then ` COMMENT` when one is given.
    public func openSSHLine(comment: String = "") -> String {
        keyType + " " + Base64.encode(blob) + (comment.isEmpty ? "" : " " + comment)
    }

    /// Bits of a big-endian magnitude without leading zero bytes.
    public static func bitLength(_ magnitude: [UInt8]) -> Int {
        guard let first = magnitude.first else { return 0 }
        return (magnitude.count - 1) * 8 + (8 - first.leadingZeroBitCount)
    }
}

/// The RSA signature algorithms of RFC 8332, chosen by a SIGN_REQUEST's flags. `ssh-rsa` (SHA-1)
/// is not among them: a request without a SHA-2 flag is refused.
public enum RSASignatureAlgorithm: String, Sendable {
    case sha256 = "rsa-sha2-256"
    case sha512 = "rsa-sha2-512"

    /// The algorithm a request's flags ask for; nil when they ask for SHA-1. SHA-256 wins when
    /// both flags are set, as in OpenSSH's agent.
    public init?(flags: AgentSignFlags) {
        if flags.contains(.rsaSHA2_256) {
            self = .sha256
        } else if flags.contains(.rsaSHA2_512) {
            self = .sha512
        } else {
            return nil
        }
    }
}
