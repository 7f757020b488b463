/// A host's signature of a session identifier (session-bind), in the forms Apple's SecKey
/// calls take, so a daemon that links a crypto library can check it for an agent that does not.
public struct HostSignature: Equatable, Sendable {
    /// Apple's `kSecAttrKeyType` code: 73 EC, 42 RSA, or keychainfs's Ed25519 code.
    public var keyType: Int64
    /// Apple's external representation: the X9.63 point, PKCS#1 `RSAPublicKey` DER, or the 32 bytes.
    public var publicKey: [UInt8]
    /// Apple's raw `SecKeyAlgorithm` name of the message-signing algorithm.
    public var algorithm: String
    /// DER `ECDSA-Sig-Value` for ECDSA; the signature bytes for RSA and Ed25519.
    public var signature: [UInt8]

    static let ellipticCurveType: Int64 = 73
    static let rsaType: Int64 = 42
    static let ed25519Type: Int64 = 2_147_509_167

    /// Reads a host key blob and an SSH signature blob of it.
    /// - Throws: `unsupportedKeyType` for a type this agent does not speak, `ssh-rsa` (SHA-1)
    ///   included; `malformed` when the signature's type is not the key's, or its fields do not fit.
    public init(hostKey: [UInt8], signature blob: [UInt8]) throws {
        let key = try SSHPublicKey(blob: hostKey)
        var reader = SSHWireReader(blob)
        let name = try reader.readText()
        switch key {
        case .ed25519(let a):
            let bytes = try reader.readString()
            try reader.expectEnd()
            guard name == "ssh-ed25519", bytes.count == 64 else { throw SSHAgentCodecError.malformed("Ed25519 signature") }
            self.init(keyType: Self.ed25519Type, publicKey: a, algorithm: "algid:sign:EdDSA:message-Ed25519", signature: bytes)
        case .ecdsa(let point):
            let (curve, r, s) = try SSHSignatureBlob.decodeECDSA(blob)
            guard curve == point.curve else { throw SSHAgentCodecError.malformed("signature curve is not the key's") }
            self.init(keyType: Self.ellipticCurveType, publicKey: point.point,
                      algorithm: "algid:sign:ECDSA:message-X962:SHA\(curve.digestBits)",
                      signature: DERWriter.sequence(DERWriter.integer(r) + DERWriter.integer(s)))
        case .rsa(let exponent, let modulus):
            guard let rsa = RSASignatureAlgorithm(rawValue: name) else { throw SSHAgentCodecError.unsupportedKeyType(name) }
            let bytes = try reader.readString()
            try reader.expectEnd()
            self.init(keyType: Self.rsaType, publicKey: DERWriter.sequence(DERWriter.integer(modulus) + DERWriter.integer(exponent)),
                      algorithm: "algid:sign:RSA:message-PKCS1v15:" + (rsa == .sha256 ? "SHA256" : "SHA512"), signature: bytes)
        }
    }

    public init(keyType: Int64, publicKey: [UInt8], algorithm: String, signature: [UInt8]) {
        self.keyType = keyType
        self.publicKey = publicKey
        self.algorithm = algorithm
        self.signature = signature
    }
}

/// The two DER forms the checks above need: a positive INTEGER and a SEQUENCE.
enum DERWriter {
    static func integer(_ magnitude: [UInt8]) -> [UInt8] {
        var body = Array(magnitude.drop { $0 == 0 })
        if body.isEmpty || body[0] & 0x80 != 0 { body.insert(0, at: 0) }
        return [0x02] + length(body.count) + body
    }

    static func sequence(_ contents: [UInt8]) -> [UInt8] { [0x30] + length(contents.count) + contents }

    private static func length(_ n: Int) -> [UInt8] {
        if n < 0x80 { return [UInt8(n)] }
        var bytes: [UInt8] = []
        var rest = n
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xff), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }
}
