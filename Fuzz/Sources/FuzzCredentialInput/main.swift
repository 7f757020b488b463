import FuzzSupport
import KeychainCore
import KeychainCredentialHelpers
import KeychainCrypto

// What git and docker write to the helpers, decoded in guarded memory. Each input is read three
// ways; decoding may only fail with its own error, never trap or touch memory past its buffer:
// - as docker's JSON: a decoded Secret, encoded as Go would and decoded again, is the same bytes;
// - as git's key=value lines: the password is exactly the bytes after the last `password=`;
// - as a registry URL: the URL its attributes give back parses to the same server.
runFuzzer { bytes in
    checkJSON(bytes)
    checkGit(bytes)
    checkURL(String(decoding: bytes, as: UTF8.self))
}

func secure(_ bytes: [UInt8]) -> SecureBytes {
    guard let s = try? SecureBytes(copying: bytes) else { fatalError("no guarded memory") }
    return s
}

func checkJSON(_ bytes: [UInt8]) {
    let parsed: JSONCredentials
    do {
        parsed = try JSONCredentials(parsing: secure(bytes), secretKey: "secret")
    } catch is JSONCredentials.Malformed {
        return
    } catch {
        fatalError("JSON decoding threw \(error)")
    }
    guard let secret = parsed.secret else { return }
    let plain = secret.withUnsafeBytes { Array($0) }
    var encoded = Array("{\"Secret\":".utf8)
    var quoted = [UInt8](repeating: 0, count: plain.withUnsafeBytes { JSONString.encodedCount($0) })
    let n = quoted.withUnsafeMutableBytes { o in plain.withUnsafeBytes { JSONString.write($0, to: o.baseAddress!) } }
    require(n == quoted.count, "encodedCount \(quoted.count) but wrote \(n)")
    encoded += quoted + Array("}".utf8)
    guard let again = try? JSONCredentials(parsing: secure(encoded), secretKey: "secret") else {
        return require(false, "an encoded secret does not decode")
    }
    require(again.secret?.withUnsafeBytes { Array($0) } == plain, "secret changed in a round trip")
}

func checkGit(_ bytes: [UInt8]) {
    let credential: GitCredential
    do {
        credential = try GitCredential(parsing: secure(bytes))
    } catch is GitCredential.BadInput {
        return
    } catch {
        fatalError("git decoding threw \(error)")
    }
    // The expected password: the value of the last `password=` line before the first blank line.
    var expected: [UInt8]?
    for line in bytes.split(separator: 10, omittingEmptySubsequences: false) {
        if line.isEmpty { break }
        if line.starts(with: Array("password=".utf8)) { expected = Array(line.dropFirst(9)) }
    }
    require(credential.password?.withUnsafeBytes { Array($0) } == expected, "password is not the line's value")
}

func checkURL(_ text: String) {
    guard let url = try? RegistryURL(text) else { return }
    require(!url.host.isEmpty, "a URL without a host parsed")
    // Hosts of the characters a registry name has give back a URL naming the same server.
    guard url.host.utf8.allSatisfy({ $0 == 45 || $0 == 46 || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }),
          let back = RegistryURL.url(of: url.query) else { return }
    guard let again = try? RegistryURL(back) else { return require(false, "\(back) does not parse") }
    require(again == url, "\(text) gave back \(back), another server")
}
