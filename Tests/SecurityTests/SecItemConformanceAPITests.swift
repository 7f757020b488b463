import Foundation
import KeychainTestSupport
import Security
import XCTest

/// Issue 4 and PRODUCT 2/3: the API surface — raw key strings, status values and sentences,
/// SecAccessControlCreateFlags, SecRandomCopyBytes, the CoreFoundation spellings.
final class SecItemConformanceAPITests: SecItemConformanceCase {
    func testRawKeyStringsEqualApples() {
        let expected: [(CFString, String, String)] = [
            (kSecClass, "class", "kSecClass"),
            (kSecClassGenericPassword, "genp", "kSecClassGenericPassword"),
            (kSecClassInternetPassword, "inet", "kSecClassInternetPassword"),
            (kSecClassCertificate, "cert", "kSecClassCertificate"),
            (kSecClassKey, "keys", "kSecClassKey"),
            (kSecClassIdentity, "idnt", "kSecClassIdentity"),
            (kSecAttrAccessible, "pdmn", "kSecAttrAccessible"),
            (kSecAttrAccessControl, "accc", "kSecAttrAccessControl"),
            (kSecAttrAccessGroup, "agrp", "kSecAttrAccessGroup"),
            (kSecAttrSynchronizable, "sync", "kSecAttrSynchronizable"),
            (kSecAttrSynchronizableAny, "syna", "kSecAttrSynchronizableAny"),
            (kSecAttrCreationDate, "cdat", "kSecAttrCreationDate"),
            (kSecAttrModificationDate, "mdat", "kSecAttrModificationDate"),
            (kSecAttrDescription, "desc", "kSecAttrDescription"),
            (kSecAttrComment, "icmt", "kSecAttrComment"),
            (kSecAttrCreator, "crtr", "kSecAttrCreator"),
            (kSecAttrType, "type", "kSecAttrType"),
            (kSecAttrLabel, "labl", "kSecAttrLabel"),
            (kSecAttrIsInvisible, "invi", "kSecAttrIsInvisible"),
            (kSecAttrIsNegative, "nega", "kSecAttrIsNegative"),
            (kSecAttrAccount, "acct", "kSecAttrAccount"),
            (kSecAttrService, "svce", "kSecAttrService"),
            (kSecAttrGeneric, "gena", "kSecAttrGeneric"),
            (kSecAttrSecurityDomain, "sdmn", "kSecAttrSecurityDomain"),
            (kSecAttrServer, "srvr", "kSecAttrServer"),
            (kSecAttrProtocol, "ptcl", "kSecAttrProtocol"),
            (kSecAttrAuthenticationType, "atyp", "kSecAttrAuthenticationType"),
            (kSecAttrPort, "port", "kSecAttrPort"),
            (kSecAttrPath, "path", "kSecAttrPath"),
            (kSecAttrSubject, "subj", "kSecAttrSubject"),
            (kSecAttrIssuer, "issr", "kSecAttrIssuer"),
            (kSecAttrSerialNumber, "slnr", "kSecAttrSerialNumber"),
            (kSecAttrSubjectKeyID, "skid", "kSecAttrSubjectKeyID"),
            (kSecAttrPublicKeyHash, "pkhh", "kSecAttrPublicKeyHash"),
            (kSecAttrCertificateType, "ctyp", "kSecAttrCertificateType"),
            (kSecAttrCertificateEncoding, "cenc", "kSecAttrCertificateEncoding"),
            (kSecAttrKeyClass, "kcls", "kSecAttrKeyClass"),
            (kSecAttrApplicationLabel, "klbl", "kSecAttrApplicationLabel"),
            (kSecAttrIsPermanent, "perm", "kSecAttrIsPermanent"),
            (kSecAttrIsSensitive, "sens", "kSecAttrIsSensitive"),
            (kSecAttrIsExtractable, "extr", "kSecAttrIsExtractable"),
            (kSecAttrApplicationTag, "atag", "kSecAttrApplicationTag"),
            (kSecAttrKeyType, "type", "kSecAttrKeyType"),
            (kSecAttrKeySizeInBits, "bsiz", "kSecAttrKeySizeInBits"),
            (kSecAttrEffectiveKeySize, "esiz", "kSecAttrEffectiveKeySize"),
            (kSecAttrCanEncrypt, "encr", "kSecAttrCanEncrypt"),
            (kSecAttrCanDecrypt, "decr", "kSecAttrCanDecrypt"),
            (kSecAttrCanDerive, "drve", "kSecAttrCanDerive"),
            (kSecAttrCanSign, "sign", "kSecAttrCanSign"),
            (kSecAttrCanVerify, "vrfy", "kSecAttrCanVerify"),
            (kSecAttrCanWrap, "wrap", "kSecAttrCanWrap"),
            (kSecAttrCanUnwrap, "unwp", "kSecAttrCanUnwrap"),
            (kSecAttrAccessibleWhenUnlocked, "ak", "kSecAttrAccessibleWhenUnlocked"),
            (kSecAttrAccessibleAfterFirstUnlock, "ck", "kSecAttrAccessibleAfterFirstUnlock"),
            (kSecAttrAccessibleAlways, "dk", "kSecAttrAccessibleAlways"),
            (kSecAttrAccessibleWhenUnlockedThisDeviceOnly, "aku", "kSecAttrAccessibleWhenUnlockedThisDeviceOnly"),
            (kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, "cku", "kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly"),
            (kSecAttrAccessibleAlwaysThisDeviceOnly, "dku", "kSecAttrAccessibleAlwaysThisDeviceOnly"),
            (kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, "akpu", "kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly"),
            (kSecAttrProtocolFTP, "ftp ", "kSecAttrProtocolFTP"),
            (kSecAttrProtocolFTPAccount, "ftpa", "kSecAttrProtocolFTPAccount"),
            (kSecAttrProtocolHTTP, "http", "kSecAttrProtocolHTTP"),
            (kSecAttrProtocolIRC, "irc ", "kSecAttrProtocolIRC"),
            (kSecAttrProtocolNNTP, "nntp", "kSecAttrProtocolNNTP"),
            (kSecAttrProtocolPOP3, "pop3", "kSecAttrProtocolPOP3"),
            (kSecAttrProtocolSMTP, "smtp", "kSecAttrProtocolSMTP"),
            (kSecAttrProtocolSOCKS, "sox ", "kSecAttrProtocolSOCKS"),
            (kSecAttrProtocolIMAP, "imap", "kSecAttrProtocolIMAP"),
            (kSecAttrProtocolLDAP, "ldap", "kSecAttrProtocolLDAP"),
            (kSecAttrProtocolAppleTalk, "atlk", "kSecAttrProtocolAppleTalk"),
            (kSecAttrProtocolAFP, "afp ", "kSecAttrProtocolAFP"),
            (kSecAttrProtocolTelnet, "teln", "kSecAttrProtocolTelnet"),
            (kSecAttrProtocolSSH, "ssh ", "kSecAttrProtocolSSH"),
            (kSecAttrProtocolFTPS, "ftps", "kSecAttrProtocolFTPS"),
            (kSecAttrProtocolHTTPS, "htps", "kSecAttrProtocolHTTPS"),
            (kSecAttrProtocolHTTPProxy, "htpx", "kSecAttrProtocolHTTPProxy"),
            (kSecAttrProtocolHTTPSProxy, "htsx", "kSecAttrProtocolHTTPSProxy"),
            (kSecAttrProtocolFTPProxy, "ftpx", "kSecAttrProtocolFTPProxy"),
            (kSecAttrProtocolSMB, "smb ", "kSecAttrProtocolSMB"),
            (kSecAttrProtocolRTSP, "rtsp", "kSecAttrProtocolRTSP"),
            (kSecAttrProtocolRTSPProxy, "rtsx", "kSecAttrProtocolRTSPProxy"),
            (kSecAttrProtocolDAAP, "daap", "kSecAttrProtocolDAAP"),
            (kSecAttrProtocolEPPC, "eppc", "kSecAttrProtocolEPPC"),
            (kSecAttrProtocolIPP, "ipp ", "kSecAttrProtocolIPP"),
            (kSecAttrProtocolNNTPS, "ntps", "kSecAttrProtocolNNTPS"),
            (kSecAttrProtocolLDAPS, "ldps", "kSecAttrProtocolLDAPS"),
            (kSecAttrProtocolTelnetS, "tels", "kSecAttrProtocolTelnetS"),
            (kSecAttrProtocolIMAPS, "imps", "kSecAttrProtocolIMAPS"),
            (kSecAttrProtocolIRCS, "ircs", "kSecAttrProtocolIRCS"),
            (kSecAttrProtocolPOP3S, "pops", "kSecAttrProtocolPOP3S"),
            (kSecAttrAuthenticationTypeNTLM, "ntlm", "kSecAttrAuthenticationTypeNTLM"),
            (kSecAttrAuthenticationTypeMSN, "msna", "kSecAttrAuthenticationTypeMSN"),
            (kSecAttrAuthenticationTypeDPA, "dpaa", "kSecAttrAuthenticationTypeDPA"),
            (kSecAttrAuthenticationTypeRPA, "rpaa", "kSecAttrAuthenticationTypeRPA"),
            (kSecAttrAuthenticationTypeHTTPBasic, "http", "kSecAttrAuthenticationTypeHTTPBasic"),
            (kSecAttrAuthenticationTypeHTTPDigest, "httd", "kSecAttrAuthenticationTypeHTTPDigest"),
            (kSecAttrAuthenticationTypeHTMLForm, "form", "kSecAttrAuthenticationTypeHTMLForm"),
            (kSecAttrAuthenticationTypeDefault, "dflt", "kSecAttrAuthenticationTypeDefault"),
            (kSecMatchLimit, "m_Limit", "kSecMatchLimit"),
            (kSecMatchLimitOne, "m_LimitOne", "kSecMatchLimitOne"),
            (kSecMatchLimitAll, "m_LimitAll", "kSecMatchLimitAll"),
            (kSecMatchCaseInsensitive, "m_CaseInsensitive", "kSecMatchCaseInsensitive"),
            (kSecReturnData, "r_Data", "kSecReturnData"),
            (kSecReturnAttributes, "r_Attributes", "kSecReturnAttributes"),
            (kSecReturnRef, "r_Ref", "kSecReturnRef"),
            (kSecReturnPersistentRef, "r_PersistentRef", "kSecReturnPersistentRef"),
            (kSecValueData, "v_Data", "kSecValueData"),
            (kSecValueRef, "v_Ref", "kSecValueRef"),
            (kSecValuePersistentRef, "v_PersistentRef", "kSecValuePersistentRef"),
            (kSecUseAuthenticationUI, "u_AuthUI", "kSecUseAuthenticationUI"),
            (kSecUseAuthenticationUIAllow, "u_AuthUIA", "kSecUseAuthenticationUIAllow"),
            (kSecUseAuthenticationUIFail, "u_AuthUIF", "kSecUseAuthenticationUIFail"),
            (kSecUseAuthenticationUISkip, "u_AuthUIS", "kSecUseAuthenticationUISkip"),
            (kSecUseAuthenticationContext, "u_AuthCtx", "kSecUseAuthenticationContext"),
            (kSecUseOperationPrompt, "u_OpPrompt", "kSecUseOperationPrompt"),
            (kSecUseNoAuthenticationUI, "u_NoAuthUI", "kSecUseNoAuthenticationUI"),
            (kSecUseDataProtectionKeychain, "nleg", "kSecUseDataProtectionKeychain"),
        ]
        for (constant, raw, name) in expected {
            XCTAssertEqual(constant as String, raw, name)
        }
        // The spellings callers compare with.
        XCTAssertEqual(String(kSecAttrAccount), "acct")
        XCTAssertEqual(kSecClass as String, "class")
        XCTAssertTrue(kSecAttrService == ("svce" as CFString))
        let keys: [String: Any] = [kSecAttrAccount as String: 1]
        XCTAssertNotNil(keys["acct"])
    }

    func testStatusValuesEqualApples() {
        let expected: [(OSStatus, OSStatus, String)] = [
            (errSecSuccess, 0, "errSecSuccess"), (noErr, 0, "noErr"), (errSecUnimplemented, -4, "errSecUnimplemented"),
            (errSecIO, -36, "errSecIO"), (errSecParam, -50, "errSecParam"), (errSecAllocate, -108, "errSecAllocate"),
            (errSecUserCanceled, -128, "errSecUserCanceled"), (errSecBadReq, -909, "errSecBadReq"),
            (errSecNotAvailable, -25291, "errSecNotAvailable"), (errSecReadOnly, -25292, "errSecReadOnly"),
            (errSecAuthFailed, -25293, "errSecAuthFailed"), (errSecDuplicateItem, -25299, "errSecDuplicateItem"),
            (errSecItemNotFound, -25300, "errSecItemNotFound"), (errSecNoSuchAttr, -25303, "errSecNoSuchAttr"),
            (errSecNoSuchClass, -25306, "errSecNoSuchClass"), (errSecInteractionNotAllowed, -25308, "errSecInteractionNotAllowed"),
            (errSecInteractionRequired, -25315, "errSecInteractionRequired"),
            (errSecDataNotAvailable, -25316, "errSecDataNotAvailable"), (errSecDecode, -26275, "errSecDecode"),
            (errSecMissingEntitlement, -34018, "errSecMissingEntitlement"),
            // A few of SecBase.h's others, which exist so code compiles.
            (errSecInvalidItemRef, -25304, "errSecInvalidItemRef"), (errSecNoSuchKeychain, -25294, "errSecNoSuchKeychain"),
            (errSecInternalComponent, -2070, "errSecInternalComponent"), (errSecRestrictedAPI, -34020, "errSecRestrictedAPI"),
            (errSecServiceNotAvailable, -67585, "errSecServiceNotAvailable"),
        ]
        for (value, raw, name) in expected {
            XCTAssertEqual(value, raw, name)
        }
    }

    func testErrorMessageSentencesAreApples() {
        // SecBase.h's comments, which SecCopyErrorMessageString returns on Apple's platforms.
        let sentences: [(OSStatus, String)] = [
            (errSecSuccess, "No error."),
            (errSecUnimplemented, "Function or operation not implemented."),
            (errSecIO, "I/O error."),
            (errSecParam, "One or more parameters passed to a function were not valid."),
            (errSecAllocate, "Failed to allocate memory."),
            (errSecUserCanceled, "User canceled the operation."),
            (errSecBadReq, "Bad parameter or invalid state for operation."),
            (errSecNotAvailable, "No keychain is available. You may need to restart your computer."),
            (errSecReadOnly, "This keychain cannot be modified."),
            (errSecAuthFailed, "The user name or passphrase you entered is not correct."),
            (errSecDuplicateItem, "The specified item already exists in the keychain."),
            (errSecItemNotFound, "The specified item could not be found in the keychain."),
            (errSecNoSuchAttr, "The specified attribute does not exist."),
            (errSecInteractionNotAllowed, "User interaction is not allowed."),
            (errSecInteractionRequired, "User interaction is required, but is currently not allowed."),
            (errSecDataNotAvailable, "The contents of this item cannot be retrieved."),
            (errSecDecode, "Unable to decode the provided data."),
            (errSecMissingEntitlement, "A required entitlement isn't present."),
        ]
        for (status, sentence) in sentences {
            XCTAssertEqual(SecCopyErrorMessageString(status, nil) as String?, sentence, "\(status)")
        }
    }

    func testErrorMessageSentenceOfNoSuchClassIsApples() throws {
        let sentence = SecCopyErrorMessageString(errSecNoSuchClass, nil) as String?
        XCTAssertEqual(sentence, "The specified item does not appear to be a valid keychain item.")
    }

    func testAccessControlFlagsHaveApplesBitValues() {
        let expected: [(SecAccessControlCreateFlags, CFOptionFlags, String)] = [
            (.userPresence, 1, "userPresence"), (.biometryAny, 2, "biometryAny"), (.touchIDAny, 2, "touchIDAny"),
            (.biometryCurrentSet, 8, "biometryCurrentSet"), (.touchIDCurrentSet, 8, "touchIDCurrentSet"),
            (.devicePasscode, 16, "devicePasscode"), (.watch, 32, "watch"), (.or, 1 << 14, "or"), (.and, 1 << 15, "and"),
            (.privateKeyUsage, 1 << 30, "privateKeyUsage"), (.applicationPassword, 1 << 31, "applicationPassword"),
        ]
        for (flag, raw, name) in expected {
            XCTAssertEqual(flag.rawValue, raw, name)
        }
        // Built from CFOptionFlags, as code that stores the raw value does.
        let fromRaw = SecAccessControlCreateFlags(rawValue: CFOptionFlags(2 | 16 | (1 << 14)))
        XCTAssertEqual(fromRaw, [.biometryAny, .or, .devicePasscode])
        XCTAssertTrue(fromRaw.contains(.devicePasscode))
        XCTAssertFalse(fromRaw.contains(.userPresence))
        let flags: SecAccessControlCreateFlags = [.privateKeyUsage, .biometryCurrentSet]
        XCTAssertEqual(flags.rawValue, (1 << 30) | 8)
    }

    func testRandomCopyBytesFillsTheBuffer() {
        var first = [UInt8](repeating: 0, count: 64)
        var second = [UInt8](repeating: 0, count: 64)
        XCTAssertEqual(SecRandomCopyBytes(kSecRandomDefault, first.count, &first), errSecSuccess)
        XCTAssertEqual(first.withUnsafeMutableBytes { SecRandomCopyBytes(kSecRandomDefault, $0.count, $0.baseAddress!) },
                       errSecSuccess)
        XCTAssertEqual(SecRandomCopyBytes(kSecRandomDefault, second.count, &second), errSecSuccess)
        XCTAssertNotEqual(first, [UInt8](repeating: 0, count: 64))
        XCTAssertNotEqual(first, second)
        var data = Data(count: 32)
        let status = data.withUnsafeMutableBytes { SecRandomCopyBytes(kSecRandomDefault, 32, $0.baseAddress!) }
        XCTAssertEqual(status, errSecSuccess)
        XCTAssertNotEqual(data, Data(count: 32))
    }

    func testCoreFoundationSpellings() {
        let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword]
        let cf: CFDictionary = query as CFDictionary
        XCTAssertEqual(cf.count, 1)
        let t: CFBoolean = kCFBooleanTrue
        XCTAssertEqual(t, kCFBooleanTrue!)
        XCTAssertEqual(kCFBooleanFalse!.boolValue, false)
        let data: CFData = Data([1]) as CFData
        XCTAssertEqual(data.length, 1)
        let error = NSError(domain: "NSOSStatusErrorDomain", code: Int(errSecParam)) as CFError
        XCTAssertEqual(CFErrorGetCode(error), -50)
        XCTAssertEqual(CFErrorGetDomain(error) as String, "NSOSStatusErrorDomain")
        XCTAssertNotNil(CFErrorCopyUserInfo(error))
        let object: CFTypeRef = "x" as NSString
        XCTAssertEqual(object as? String, "x")
    }
}
