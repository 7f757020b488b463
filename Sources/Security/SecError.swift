import KeychainModel
import KeychainCrypto
import KeychainKeys

/// A `CFError` as Apple's Security framework makes one (`SecError` in its `SecCFError.c`):
/// domain `NSOSStatusErrorDomain`, the `OSStatus` as its code, the reason as
/// `NSDebugDescription` and nothing else in `userInfo`. Its descriptions are the ones Apple's
/// Foundation gives such an error, which callers compare:
/// - `localizedDescription` (and `CFErrorCopyDescription`): `The operation couldn’t be
///   completed. (OSStatus error -50 - <reason>)`, with Apple's curly apostrophe; without a
///   reason `The operation couldn’t be completed. (OSStatus error -50.)`.
/// - `description` (`String(describing:)`, `print`): `Error Domain=NSOSStatusErrorDomain
///   Code=-50 "<localizedDescription>" UserInfo={NSDebugDescription=<reason>}`.
/// Foundation on Linux spells the first "could not be completed" and builds the second
/// differently, hence the subclass. It is still a `CFError` (`NSError`) for every caller.
final class SecurityError: NSError, @unchecked Sendable {
    // Unchecked: immutable after init, as every NSError.

    static let domain = "NSOSStatusErrorDomain"

    /// An error of `status` whose reason is `reason` (no secret, no attribute value in it).
    convenience init(_ status: OSStatus, _ reason: String) {
        self.init(domain: Self.domain, code: Int(status), userInfo: reason.isEmpty ? [:] : [NSDebugDescriptionErrorKey: reason])
    }

    var reason: String? { userInfo[NSDebugDescriptionErrorKey] as? String }

    override var localizedDescription: String {
        if let reason { return "The operation couldn’t be completed. (OSStatus error \(code) - \(reason))" }
        return "The operation couldn’t be completed. (OSStatus error \(code).)"
    }

    override var description: String {
        let info = reason.map { "{NSDebugDescription=\($0)}" } ?? "{}"
        return "Error Domain=\(domain) Code=\(code) \"\(localizedDescription)\" UserInfo=\(info)"
    }
}

/// Sets `error` to a CFError of Apple's domain, code and description, as Apple's functions do.
func setError(_ error: UnsafeMutablePointer<Unmanaged<CFError>?>?, _ status: OSStatus, _ reason: String) {
    error?.pointee = Unmanaged.passRetained(SecurityError(status, reason))
}

/// Apple's status for an error thrown inside a Security call.
func appleStatus(of error: Error) -> OSStatus {
    switch error {
    case let e as KeyError: return e.appleStatus.status
    case let s as KeychainStatus: return s.rawValue
    case CryptoError.allocationFailed: return errSecAllocate
    case let f as KeyFailure: return f.status
    default: return errSecInternalComponent
    }
}

/// Apple's status for an error thrown inside a Security call, and the reason to give with it,
/// prefixed with `what` (the call's or the algorithm's name) unless Apple's own reason is used.
func statusAndReason(of error: Error, _ what: String) -> (status: OSStatus, reason: String) {
    let status = appleStatus(of: error)
    switch error {
    case let e as KeyError:
        return (status, "\(what): \(e.appleStatus.reason)")
    case let s as KeychainStatus:
        // What the status means here: for a locked vault this asks the daemon once more.
        let meaning = KeychainConnection.shared.meaning(of: s).map { " (\($0))" } ?? ""
        return (status, "\(what): \(s.message)\(meaning)")
    case CryptoError.allocationFailed:
        return (status, "\(what): out of guarded memory")
    case let f as KeyFailure:
        return (status, f.apple ? f.reason : "\(what): \(f.reason)")
    default:
        return (status, "\(what) failed")
    }
}

/// A refusal of the Security layer itself (a bad parameter, an algorithm the key lacks).
/// `apple`: `reason` is Apple's own sentence for the case, given as it is.
struct KeyFailure: Error {
    var status: OSStatus
    var reason: String
    var apple = false
    static func param(_ reason: String) -> KeyFailure { KeyFailure(status: errSecParam, reason: reason) }
    static func unsupported(_ reason: String) -> KeyFailure { KeyFailure(status: errSecUnimplemented, reason: reason) }
    /// Apple's sentence for `status`, without the call's name before it.
    static func apple(_ status: OSStatus, _ reason: String) -> KeyFailure { KeyFailure(status: status, reason: reason, apple: true) }
}
