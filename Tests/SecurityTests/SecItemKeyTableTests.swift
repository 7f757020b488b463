import Foundation
import KeychainCore
import KeychainTestSupport
import Security
import XCTest

/// Security's kSec* constants and KeychainCore's key table are one vocabulary: each key constant
/// is its AttributeKey's raw name and each value constant the table's value, so a dictionary a
/// caller builds from the constants is read by the engine under the same names
/// (`SecItemConformanceAPITests` pins the constants to Apple's strings).
final class SecItemKeyTableTests: XCTestCase {
    func testEveryKeyConstantIsItsAttributeKey() {
        let table: [(CFString, AttributeKey, String)] = [
            (kSecClass, .class, "kSecClass"),
            (kSecAttrAccessible, .accessible, "kSecAttrAccessible"),
            (kSecAttrAccessControl, .accessControl, "kSecAttrAccessControl"),
            (kSecAttrAccessGroup, .accessGroup, "kSecAttrAccessGroup"),
            (kSecAttrSynchronizable, .synchronizable, "kSecAttrSynchronizable"),
            (kSecAttrCreationDate, .creationDate, "kSecAttrCreationDate"),
            (kSecAttrModificationDate, .modificationDate, "kSecAttrModificationDate"),
            (kSecAttrDescription, .description, "kSecAttrDescription"),
            (kSecAttrComment, .comment, "kSecAttrComment"),
            (kSecAttrCreator, .creator, "kSecAttrCreator"),
            (kSecAttrType, .type, "kSecAttrType"),
            (kSecAttrLabel, .label, "kSecAttrLabel"),
            (kSecAttrIsInvisible, .isInvisible, "kSecAttrIsInvisible"),
            (kSecAttrIsNegative, .isNegative, "kSecAttrIsNegative"),
            (kSecAttrAccount, .account, "kSecAttrAccount"),
            (kSecAttrService, .service, "kSecAttrService"),
            (kSecAttrGeneric, .generic, "kSecAttrGeneric"),
            (kSecAttrSecurityDomain, .securityDomain, "kSecAttrSecurityDomain"),
            (kSecAttrServer, .server, "kSecAttrServer"),
            (kSecAttrProtocol, .protocol, "kSecAttrProtocol"),
            (kSecAttrAuthenticationType, .authenticationType, "kSecAttrAuthenticationType"),
            (kSecAttrPort, .port, "kSecAttrPort"),
            (kSecAttrPath, .path, "kSecAttrPath"),
            (kSecAttrSubject, .subject, "kSecAttrSubject"),
            (kSecAttrIssuer, .issuer, "kSecAttrIssuer"),
            (kSecAttrSerialNumber, .serialNumber, "kSecAttrSerialNumber"),
            (kSecAttrSubjectKeyID, .subjectKeyID, "kSecAttrSubjectKeyID"),
            (kSecAttrPublicKeyHash, .publicKeyHash, "kSecAttrPublicKeyHash"),
            (kSecAttrCertificateType, .certificateType, "kSecAttrCertificateType"),
            (kSecAttrCertificateEncoding, .certificateEncoding, "kSecAttrCertificateEncoding"),
            (kSecAttrKeyClass, .keyClass, "kSecAttrKeyClass"),
            (kSecAttrApplicationLabel, .applicationLabel, "kSecAttrApplicationLabel"),
            (kSecAttrIsPermanent, .isPermanent, "kSecAttrIsPermanent"),
            (kSecAttrIsSensitive, .isSensitive, "kSecAttrIsSensitive"),
            (kSecAttrIsExtractable, .isExtractable, "kSecAttrIsExtractable"),
            (kSecAttrApplicationTag, .applicationTag, "kSecAttrApplicationTag"),
            (kSecAttrKeyType, .keyType, "kSecAttrKeyType"),
            (kSecAttrKeySizeInBits, .keySizeInBits, "kSecAttrKeySizeInBits"),
            (kSecAttrEffectiveKeySize, .effectiveKeySize, "kSecAttrEffectiveKeySize"),
            (kSecAttrCanEncrypt, .canEncrypt, "kSecAttrCanEncrypt"),
            (kSecAttrCanDecrypt, .canDecrypt, "kSecAttrCanDecrypt"),
            (kSecAttrCanDerive, .canDerive, "kSecAttrCanDerive"),
            (kSecAttrCanSign, .canSign, "kSecAttrCanSign"),
            (kSecAttrCanVerify, .canVerify, "kSecAttrCanVerify"),
            (kSecAttrCanWrap, .canWrap, "kSecAttrCanWrap"),
            (kSecAttrCanUnwrap, .canUnwrap, "kSecAttrCanUnwrap"),
            (kSecMatchLimit, .matchLimit, "kSecMatchLimit"),
            (kSecMatchCaseInsensitive, .matchCaseInsensitive, "kSecMatchCaseInsensitive"),
            (kSecReturnData, .returnData, "kSecReturnData"),
            (kSecReturnAttributes, .returnAttributes, "kSecReturnAttributes"),
            (kSecReturnRef, .returnRef, "kSecReturnRef"),
            (kSecReturnPersistentRef, .returnPersistentRef, "kSecReturnPersistentRef"),
            (kSecValueData, .valueData, "kSecValueData"),
            (kSecValueRef, .valueRef, "kSecValueRef"),
            (kSecValuePersistentRef, .valuePersistentRef, "kSecValuePersistentRef"),
            (kSecUseAuthenticationUI, .useAuthenticationUI, "kSecUseAuthenticationUI"),
            (kSecUseAuthenticationContext, .useAuthenticationContext, "kSecUseAuthenticationContext"),
            (kSecUseOperationPrompt, .useOperationPrompt, "kSecUseOperationPrompt"),
            (kSecUseNoAuthenticationUI, .useNoAuthenticationUI, "kSecUseNoAuthenticationUI"),
            (kSecUseDataProtectionKeychain, .useDataProtectionKeychain, "kSecUseDataProtectionKeychain"),
            (kSecAttrTokenID, .tokenID, "kSecAttrTokenID"),
            (kSecMatchPolicy, .matchPolicy, "kSecMatchPolicy"),
            (kSecMatchItemList, .matchItemList, "kSecMatchItemList"),
            (kSecMatchSearchList, .matchSearchList, "kSecMatchSearchList"),
            (kSecMatchIssuers, .matchIssuers, "kSecMatchIssuers"),
            (kSecMatchEmailAddressIfPresent, .matchEmailAddressIfPresent, "kSecMatchEmailAddressIfPresent"),
            (kSecMatchSubjectContains, .matchSubjectContains, "kSecMatchSubjectContains"),
            (kSecMatchSubjectStartsWith, .matchSubjectStartsWith, "kSecMatchSubjectStartsWith"),
            (kSecMatchSubjectEndsWith, .matchSubjectEndsWith, "kSecMatchSubjectEndsWith"),
            (kSecMatchSubjectWholeString, .matchSubjectWholeString, "kSecMatchSubjectWholeString"),
            (kSecMatchTrustedOnly, .matchTrustedOnly, "kSecMatchTrustedOnly"),
            (kSecMatchValidOnDate, .matchValidOnDate, "kSecMatchValidOnDate"),
            (kSecMatchDiacriticInsensitive, .matchDiacriticInsensitive, "kSecMatchDiacriticInsensitive"),
            (kSecMatchWidthInsensitive, .matchWidthInsensitive, "kSecMatchWidthInsensitive"),
        ]
        for (constant, key, name) in table { XCTAssertEqual(constant as String, key.rawValue, name) }
        XCTAssertEqual(Set(table.map { $0.1 }).count, table.count - 1, "one key per constant, but kSecAttrType and kSecAttrKeyType")
    }

    func testEveryValueConstantIsTheTablesValue() {
        let values: [(CFString, String, String)] = [
            (kSecClassGenericPassword, ItemClass.genericPassword.rawValue, "kSecClassGenericPassword"),
            (kSecClassInternetPassword, ItemClass.internetPassword.rawValue, "kSecClassInternetPassword"),
            (kSecClassCertificate, ItemClass.certificate.rawValue, "kSecClassCertificate"),
            (kSecClassKey, ItemClass.key.rawValue, "kSecClassKey"),
            (kSecClassIdentity, ValueName.identityClass, "kSecClassIdentity"),
            (kSecAttrSynchronizableAny, ValueName.synchronizableAny, "kSecAttrSynchronizableAny"),
            (kSecAttrAccessibleWhenUnlocked, ProtectionClass.whenUnlocked.rawValue, "kSecAttrAccessibleWhenUnlocked"),
            (kSecAttrAccessibleAfterFirstUnlock, ProtectionClass.afterFirstUnlock.rawValue, "kSecAttrAccessibleAfterFirstUnlock"),
            (kSecAttrAccessibleAlways, ProtectionClass.always.rawValue, "kSecAttrAccessibleAlways"),
            (kSecAttrAccessibleWhenUnlockedThisDeviceOnly, ProtectionClass.whenUnlockedThisDeviceOnly.rawValue, "kSecAttrAccessibleWhenUnlockedThisDeviceOnly"),
            (kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, ProtectionClass.afterFirstUnlockThisDeviceOnly.rawValue, "kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly"),
            (kSecAttrAccessibleAlwaysThisDeviceOnly, ProtectionClass.alwaysThisDeviceOnly.rawValue, "kSecAttrAccessibleAlwaysThisDeviceOnly"),
            (kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, ProtectionClass.whenPasscodeSetThisDeviceOnly.rawValue, "kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly"),
            (kSecMatchLimitOne, ValueName.matchLimitOne, "kSecMatchLimitOne"),
            (kSecMatchLimitAll, ValueName.matchLimitAll, "kSecMatchLimitAll"),
            (kSecUseAuthenticationUIAllow, ValueName.authenticationUIAllow, "kSecUseAuthenticationUIAllow"),
            (kSecUseAuthenticationUIFail, ValueName.authenticationUIFail, "kSecUseAuthenticationUIFail"),
            (kSecUseAuthenticationUISkip, ValueName.authenticationUISkip, "kSecUseAuthenticationUISkip"),
        ]
        for (constant, value, name) in values { XCTAssertEqual(constant as String, value, name) }
        XCTAssertEqual(Set(ItemClass.allCases.map(\.rawValue)),
                       Set([kSecClassGenericPassword, kSecClassInternetPassword, kSecClassCertificate, kSecClassKey].map { $0 as String }))
        XCTAssertEqual(ProtectionClass.allCases.count, 7)
    }
}
