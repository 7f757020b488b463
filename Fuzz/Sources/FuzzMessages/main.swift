import FuzzSupport
import Glibc
import KeychainCore
import KeychainCrypto
import KeychainProtocol

// The daemon's socket messages. Each input is decoded twice: as one bare payload (Request and
// Response), and as a byte stream through Frame.read on a real socket pair, every frame then
// decoded as both. Framing may only fail with errSecIO or errSecDecode, decoding with errSecDecode
// or errSecBadReq; whatever decodes re-encodes to bytes that decode to the same encoding.
let frameErrors: [KeychainStatus] = [.io, .decode]
let decodeErrors: [KeychainStatus] = [.decode, .badReq]

runFuzzer { bytes in
    // Guarded memory runs out only under a budget the fuzzer never sets.
    guard let whole = try? SecureBytes(copying: bytes) else { return require(false, "no guarded memory") }
    decodeBoth(whole)
    for payload in frames(bytes) { decodeBoth(payload) }
}

func decodeBoth(_ payload: SecureBytes) {
    if let request = decoded({ try Request.decode(payload) }) {
        guard let once = try? request.encoded() else { return require(false, "a decoded request does not encode") }
        guard let again = decoded({ try Request.decode(once) }) else {
            return require(false, "a re-encoded request does not decode")
        }
        if request.query.keys.allSatisfy({ fitsName($0.rawValue) }) && request.changes.keys.allSatisfy({ fitsName($0.rawValue) })
            && request.options.keys.allSatisfy({ fitsName($0.rawValue) }) {
            require((try? again.encoded()).map { same($0, once) } == true, "request encoding is not stable")
        }
    }
    if let response = decoded({ try Response.decode(payload) }) {
        guard let once = try? response.encoded() else { return require(false, "a decoded response does not encode") }
        guard let again = decoded({ try Response.decode(once) }) else {
            return require(false, "a re-encoded response does not decode")
        }
        if response.info.keys.allSatisfy(fitsName) {
            require((try? again.encoded()).map { same($0, once) } == true, "response encoding is not stable")
        }
    }
}

/// Attribute names are written with a u8 length; the decoder can produce longer ones (invalid
/// UTF-8 becomes U+FFFD), which the encoder cuts to 255 bytes.
func fitsName(_ name: String) -> Bool { name.utf8.count <= 255 }

func decoded<T>(_ body: () throws -> T) -> T? {
    do {
        return try body()
    } catch let status as KeychainStatus {
        require(decodeErrors.contains(status), "decode threw status \(status.rawValue)")
    } catch {
        require(false, "decode threw \(type(of: error))")
    }
    return nil
}

func same(_ a: SecureBytes, _ b: SecureBytes) -> Bool {
    a.withUnsafeBytes { x in b.withUnsafeBytes { y in x.elementsEqual(y) } }
}

/// Writes the input into one end of a socket pair, closes it, and reads frames from the other
/// end until a clean end of stream or an error.
func frames(_ bytes: [UInt8]) -> [SecureBytes] {
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
        fatalError("socketpair: errno \(errno)")
    }
    defer { close(fds[1]) }
    var size = Int32(bytes.count + 4096)
    setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    let written = bytes.withUnsafeBytes { send(fds[0], $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
    close(fds[0])
    guard written == bytes.count else { return [] }  // larger than the socket buffer: skip framing
    var out: [SecureBytes] = []
    while true {
        do {
            guard let payload = try Frame.read(from: fds[1]) else { return out }
            out.append(payload)
        } catch let status as KeychainStatus {
            require(frameErrors.contains(status), "Frame.read threw status \(status.rawValue)")
            return out
        } catch {
            require(false, "Frame.read threw \(type(of: error))")
            return out
        }
    }
}
