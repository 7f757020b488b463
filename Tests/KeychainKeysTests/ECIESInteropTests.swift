import Foundation
import KeychainCrypto
import KeychainKeys
import XCTest

/// ECIES against an independent implementation: Python's `cryptography` (OpenSSL underneath,
/// but its own X9.63 KDF and AES-GCM calls, written from Apple's description, not from ours).
/// Keys and messages go through stdin, never argv.
final class ECIESInteropTests: XCTestCase {
    static let script = """
    import json, sys
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF
    req = json.load(sys.stdin)
    curve = {256: ec.SECP256R1(), 384: ec.SECP384R1(), 521: ec.SECP521R1()}[req["bits"]]
    keylen = 16 if req["bits"] <= 256 else 32
    def material(z, eph):
        n = keylen + (16 if req["variableIV"] else 0)
        out = X963KDF(algorithm=hashes.SHA256(), length=n, sharedinfo=eph).derive(z)
        return out[:keylen], (out[keylen:] if req["variableIV"] else bytes(16))
    if req["op"] == "decrypt":
        priv = ec.derive_private_key(int(req["k"], 16), curve)
        ct = bytes.fromhex(req["data"])
        plen = 1 + 2 * ((req["bits"] + 7) // 8)
        eph = ct[:plen]
        z = priv.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(curve, eph))
        key, iv = material(z, eph)
        print(AESGCM(key).decrypt(iv, ct[plen:], None).hex())
    else:
        pub = ec.EllipticCurvePublicKey.from_encoded_point(curve, bytes.fromhex(req["pub"]))
        e = ec.generate_private_key(curve)
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
        eph = e.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
        key, iv = material(e.exchange(ec.ECDH(), pub), eph)
        print((eph + AESGCM(key).encrypt(iv, bytes.fromhex(req["data"]), None)).hex())
    """

    func python(_ request: [String: Any]) throws -> [UInt8] {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = ["-c", Self.script]
        let input = Pipe(), output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        try p.run()
        input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: request))
        try input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, "python3 cryptography failed")
        return Hex.decode(String(decoding: out, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? []
    }

    func testCiphertextsMadeHereOpenInPythonAndTheReverse() throws {
        let message = Array("ECIES across implementations".utf8)
        for curve in Curve.allCases {
            let key = try AsymmetricKey.generate(curve)
            let scalar = try key.privateBytes().withUnsafeBytes { Array($0.suffix(curve.fieldBytes)) }
            for variableIV in [false, true] {
                let ours = try message.withUnsafeBytes {
                    try ECIES.encrypt($0, to: try key.publicKey(), hash: .sha256, variableIV: variableIV)
                }
                let opened = try python(["op": "decrypt", "bits": curve.rawValue, "variableIV": variableIV,
                                         "k": Hex.encode(scalar), "data": Hex.encode(ours)])
                XCTAssertEqual(opened, message, "\(curve) variableIV \(variableIV): ours -> python")
                let theirs = try python(["op": "encrypt", "bits": curve.rawValue, "variableIV": variableIV,
                                         "pub": Hex.encode(key.publicBytes()), "data": Hex.encode(message)])
                let plain = try theirs.withUnsafeBytes { try ECIES.decrypt($0, with: key, hash: .sha256, variableIV: variableIV) }
                XCTAssertEqual(plain.withUnsafeBytes { Array($0) }, message, "\(curve) variableIV \(variableIV): python -> ours")
            }
        }
    }
}
