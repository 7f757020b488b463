import CTSS2
import KeychainCore

/// Why the TPM did not seal or unseal. Descriptions name the TCTI and the sealed file, never a
/// secret; `status` is the Apple status the API and the exit code report.
public enum TPMError: Error, CustomStringConvertible, Equatable {
    /// No TPM answered through this TCTI (no device, no simulator, no resource manager).
    case unreachable(tcti: String, detail: String)
    /// The PCRs the key is sealed to hold other values than when it was sealed.
    case pcrMismatch(pcrs: [Int])
    /// The blob was sealed by another TPM (or the TPM was cleared since).
    case otherTPM
    /// The recovery copy's auth value (from the vault passphrase) is wrong.
    case wrongPassphrase
    /// The TPM is in dictionary-attack lockout.
    case lockout
    /// Any other failure of a TSS call, with the stack's own text for the code.
    case failed(call: String, code: UInt32, text: String)

    public var description: String {
        switch self {
        case let .unreachable(tcti, detail):
            return "no TPM reachable through TCTI \"\(tcti)\" (\(detail)); set KEYCHAINFS_TCTI to a TPM (device:/dev/tpmrm0, swtpm:host=H,port=P)"
        case let .pcrMismatch(pcrs):
            return "the TPM refused to unseal the device key: PCR \(pcrs.map(String.init).joined(separator: ",")) changed since it was sealed "
                + "(a firmware or boot change); if that change was expected, run `keychainfs device-key reseal`"
        case .otherTPM:
            return "the sealed device key was made by another TPM (or this TPM was cleared): this machine cannot open the vault's ThisDeviceOnly items"
        case .wrongPassphrase:
            return "the TPM refused the recovery copy: wrong vault passphrase"
        case .lockout:
            return "the TPM is in dictionary-attack lockout; wait for it to recover or reset it with the lockout authorization"
        case let .failed(call, code, text):
            return "\(call) failed: 0x\(String(code, radix: 16)) \(text)"
        }
    }

    public var status: KeychainStatus {
        switch self {
        case .unreachable: return .notAvailable
        case .pcrMismatch, .wrongPassphrase, .lockout: return .authFailed
        case .otherTPM: return .decode
        case .failed: return .internalComponent
        }
    }

    /// Classifies the return code of `call`; nil for success.
    static func check(_ rc: TSS2_RC, _ call: String, pcrs: [Int] = []) -> TPMError? {
        guard rc != 0 else { return nil }
        if kc_rc_is_tpm(rc) != 0 {
            switch kc_rc_base(rc) {
            case kc_rc_policy_fail: return .pcrMismatch(pcrs: pcrs)
            case kc_rc_auth_fail, kc_rc_bad_auth: return .wrongPassphrase
            case kc_rc_integrity: return .otherTPM
            case kc_rc_lockout: return .lockout
            default: break
            }
        }
        return .failed(call: call, code: rc, text: String(cString: Tss2_RC_Decode(rc)))
    }
}
