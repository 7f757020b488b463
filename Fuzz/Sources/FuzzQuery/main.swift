import FuzzSupport
import KeychainCore

// A query as the daemon receives it: the first byte picks the operation (search, update or
// delete), the rest is an attribute record in the socket's encoding (AttributeCoding). Decoding
// may only fail with errSecDecode; parsing may only fail with the statuses ParsedQuery documents.
let operations = ParsedQuery.Operation.allCases
let parseErrors: [KeychainStatus] = [.param, .noSuchClass, .noSuchAttr, .unimplemented]

runFuzzer { bytes in
    guard let first = bytes.first else { return }
    let operation = operations[Int(first) % operations.count]
    let record = bytes.dropFirst()
    let query: Attributes
    do {
        query = try Array(record).withUnsafeBytes { buf in
            var r = ByteReader(buf)
            return try AttributeCoding.read(from: &r)
        }
    } catch let status as KeychainStatus {
        require(status == .decode, "AttributeCoding.read threw \(status.rawValue)")
        return
    } catch {
        require(false, "AttributeCoding.read threw \(type(of: error))")
        return
    }
    do {
        _ = try ParsedQuery(query, operation: operation)
    } catch let status as KeychainStatus {
        require(parseErrors.contains(status), "ParsedQuery threw \(status.rawValue)")
    } catch {
        require(false, "ParsedQuery threw \(type(of: error))")
    }
}
