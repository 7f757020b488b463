import FuzzSupport
import KeychainSSHAgent

// The SSH agent's messages (docs/ssh-agent.md). The input is a byte stream as a client would
// write it to the agent's socket: cut into frames by AgentFrameBuffer, each frame decoded as a
// request and, for the add messages, as a key to store. Every failure must be an
// SSHAgentCodecError (the agent answers SSH_AGENT_FAILURE); a key blob that decodes encodes back
// to exactly its bytes; an added key's private fields lie inside the message.
runFuzzer { bytes in
    var frames = AgentFrameBuffer()
    frames.append(bytes)
    while case .frame(let frame) = frames.next() {
        check(frame)
    }
    check(bytes)
}

func check(_ frame: [UInt8]) {
    if let request = decoded({ try AgentRequest.decode(frame) }) {
        switch request {
        case .sign(let blob, _, _), .removeIdentity(let blob):
            if let key = decoded({ try SSHPublicKey(blob: blob) }) {
                require(key.blob == blob, "a key blob does not encode back to its bytes")
                require(decoded({ try SSHPublicKey(blob: key.blob) }) == key, "a re-encoded key decodes to another")
            }
        default:
            break
        }
        // What a restricted key is asked to sign is parsed as a login request.
        if case .sign(_, let data, _) = request { _ = decoded({ try UserAuthRequest(parsing: data) }) }
    }
    guard let number = frame.first, number == 17 || number == 25 else { return }
    let body = frame.dropFirst()
    guard let added = decoded({ try AddedIdentity.decode(body, constrained: number == 25) }) else { return }
    if let destinations = added.destinations {
        require(decoded({ try DestinationRestriction(encoded: destinations.encoded) }) == destinations,
                "stored destinations do not decode to what was added")
    }
    let inside = { (range: Range<Int>) in body.indices.contains(range.lowerBound) && range.upperBound <= body.endIndex }
    switch added.key {
    case .ecdsa(let curve, let point, let scalar):
        require(inside(scalar) && scalar.count <= curve.coordinateLength && point.count == 1 + 2 * curve.coordinateLength,
                "an ECDSA key's fields do not fit its curve")
    case .ed25519(let publicKey, let secret):
        require(inside(secret) && secret.count == 64 && publicKey.count == 32, "an Ed25519 key's fields have the wrong size")
    case .rsa(_, _, let d, let iqmp, let p, let q):
        require([d, iqmp, p, q].allSatisfy(inside), "an RSA key's fields lie outside the message")
    }
    require(decoded({ try SSHPublicKey(blob: added.publicKey.blob) }) == added.publicKey, "an added key's public half does not round-trip")
}

func decoded<T>(_ body: () throws -> T) -> T? {
    do {
        return try body()
    } catch is SSHAgentCodecError {
        return nil
    } catch {
        require(false, "decode threw \(type(of: error))")
        return nil
    }
}
