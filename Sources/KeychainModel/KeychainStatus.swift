/// Apple's `OSStatus` values for keychain results, as a typed error.
/// `rawValue` is the exact `OSStatus`; `message` is Apple's sentence for it.
public struct KeychainStatus: Error, RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let success = KeychainStatus(rawValue: 0)
    public static let unimplemented = KeychainStatus(rawValue: -4)
    public static let diskFull = KeychainStatus(rawValue: -34)
    public static let io = KeychainStatus(rawValue: -36)
    public static let writePermission = KeychainStatus(rawValue: -61)
    public static let param = KeychainStatus(rawValue: -50)
    public static let allocate = KeychainStatus(rawValue: -108)
    public static let userCanceled = KeychainStatus(rawValue: -128)
    public static let badReq = KeychainStatus(rawValue: -909)
    public static let internalComponent = KeychainStatus(rawValue: -2070)
    public static let notAvailable = KeychainStatus(rawValue: -25291)
    public static let readOnly = KeychainStatus(rawValue: -25292)
    public static let authFailed = KeychainStatus(rawValue: -25293)
    public static let noSuchKeychain = KeychainStatus(rawValue: -25294)
    public static let invalidKeychain = KeychainStatus(rawValue: -25295)
    public static let duplicateKeychain = KeychainStatus(rawValue: -25296)
    public static let duplicateItem = KeychainStatus(rawValue: -25299)
    public static let itemNotFound = KeychainStatus(rawValue: -25300)
    public static let noSuchAttr = KeychainStatus(rawValue: -25303)
    public static let noSuchClass = KeychainStatus(rawValue: -25306)
    public static let interactionNotAllowed = KeychainStatus(rawValue: -25308)
    public static let interactionRequired = KeychainStatus(rawValue: -25315)
    public static let dataNotAvailable = KeychainStatus(rawValue: -25316)
    public static let passphraseRequired = KeychainStatus(rawValue: -25260)
    public static let keyUsageIncorrect = KeychainStatus(rawValue: -67731)
    public static let verifyFailed = KeychainStatus(rawValue: -67808)
    public static let decode = KeychainStatus(rawValue: -26275)
    public static let missingEntitlement = KeychainStatus(rawValue: -34018)

    /// Apple's sentence for this status (what `SecCopyErrorMessageString` returns).
    public var message: String {
        switch rawValue {
        case 0: return "No error."
        case -4: return "Function or operation not implemented."
        case -34: return "The disk is full."
        case -36: return "I/O error."
        case -50: return "One or more parameters passed to a function were not valid."
        case -61: return "Write permissions error."
        case -108: return "Failed to allocate memory."
        case -128: return "User canceled the operation."
        case -909: return "Bad parameter or invalid state for operation."
        case -2070: return "An internal component failed."
        case -25291: return "No keychain is available. You may need to restart your computer."
        case -25292: return "This keychain cannot be modified."
        case -25293: return "The user name or passphrase you entered is not correct."
        case -25294: return "The specified keychain could not be found."
        case -25295: return "The specified keychain is not a valid keychain file."
        case -25296: return "A keychain with the same name already exists."
        case -25299: return "The specified item already exists in the keychain."
        case -25300: return "The specified item could not be found in the keychain."
        case -25303: return "The specified attribute does not exist."
        case -25306: return "The specified item does not appear to be a valid keychain item."
        case -25308: return "User interaction is not allowed."
        case -25315: return "User interaction is required, but is currently not allowed."
        case -25316: return "The contents of this item cannot be retrieved."
        case -25260: return "Passphrase is required for import/export."
        case -67731: return "The key usage is incorrect."
        case -67808: return "A cryptographic verification failure has occurred."
        case -26275: return "Unable to decode the provided data."
        case -34018: return "A required entitlement isn't present."
        default: return "OSStatus \(rawValue)"
        }
    }

    /// Apple's name for this status (`errSecItemNotFound`), as `--json` error objects give it;
    /// `OSStatus N` for one without a name here.
    public var name: String {
        switch rawValue {
        case 0: return "errSecSuccess"
        case -4: return "errSecUnimplemented"
        case -34: return "errSecDiskFull"
        case -36: return "errSecIO"
        case -50: return "errSecParam"
        case -61: return "errSecWrPerm"
        case -108: return "errSecAllocate"
        case -128: return "errSecUserCanceled"
        case -909: return "errSecBadReq"
        case -2070: return "errSecInternalComponent"
        case -25291: return "errSecNotAvailable"
        case -25292: return "errSecReadOnly"
        case -25293: return "errSecAuthFailed"
        case -25294: return "errSecNoSuchKeychain"
        case -25295: return "errSecInvalidKeychain"
        case -25296: return "errSecDuplicateKeychain"
        case -25299: return "errSecDuplicateItem"
        case -25300: return "errSecItemNotFound"
        case -25303: return "errSecNoSuchAttr"
        case -25306: return "errSecNoSuchClass"
        case -25308: return "errSecInteractionNotAllowed"
        case -25315: return "errSecInteractionRequired"
        case -25316: return "errSecDataNotAvailable"
        case -25260: return "errSecPassphraseRequired"
        case -67731: return "errSecKeyUsageIncorrect"
        case -26275: return "errSecDecode"
        case -34018: return "errSecMissingEntitlement"
        default: return "OSStatus \(rawValue)"
        }
    }

    /// The process exit status the `security` tool uses for this status: its low byte.
    public var exitCode: Int32 { rawValue == 0 ? 0 : Int32(UInt8(truncatingIfNeeded: rawValue)) }

    /// Lets callers write `catch KeychainStatus.itemNotFound`.
    public static func ~= (pattern: KeychainStatus, value: Error) -> Bool {
        (value as? KeychainStatus) == pattern
    }
}

extension KeychainStatus: CustomStringConvertible {
    public var description: String { "\(message) (\(rawValue))" }
}
