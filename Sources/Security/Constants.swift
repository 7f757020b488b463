import KeychainModel

// Apple's keychain constants with their raw strings (SecItem.h). Callers compare these strings,
// so each must equal Apple's exactly. Keys and the values the engine reads come from KeychainCore's
// tables (AttributeKey, ValueName, ItemClass, ProtectionClass), the one source of those names.

// MARK: Classes
nonisolated(unsafe) public let kSecClass: CFString = AttributeKey.`class`.rawValue as CFString
nonisolated(unsafe) public let kSecClassGenericPassword: CFString = ItemClass.genericPassword.rawValue as CFString
nonisolated(unsafe) public let kSecClassInternetPassword: CFString = ItemClass.internetPassword.rawValue as CFString
nonisolated(unsafe) public let kSecClassCertificate: CFString = ItemClass.certificate.rawValue as CFString
nonisolated(unsafe) public let kSecClassKey: CFString = ItemClass.key.rawValue as CFString
nonisolated(unsafe) public let kSecClassIdentity: CFString = ValueName.identityClass as CFString

// MARK: Attributes
nonisolated(unsafe) public let kSecAttrAccessible: CFString = AttributeKey.accessible.rawValue as CFString
nonisolated(unsafe) public let kSecAttrAccessControl: CFString = AttributeKey.accessControl.rawValue as CFString
nonisolated(unsafe) public let kSecAttrAccessGroup: CFString = AttributeKey.accessGroup.rawValue as CFString
nonisolated(unsafe) public let kSecAttrSynchronizable: CFString = AttributeKey.synchronizable.rawValue as CFString
nonisolated(unsafe) public let kSecAttrSynchronizableAny: CFString = ValueName.synchronizableAny as CFString
nonisolated(unsafe) public let kSecAttrCreationDate: CFString = AttributeKey.creationDate.rawValue as CFString
nonisolated(unsafe) public let kSecAttrModificationDate: CFString = AttributeKey.modificationDate.rawValue as CFString
nonisolated(unsafe) public let kSecAttrDescription: CFString = AttributeKey.description.rawValue as CFString
nonisolated(unsafe) public let kSecAttrComment: CFString = AttributeKey.comment.rawValue as CFString
nonisolated(unsafe) public let kSecAttrCreator: CFString = AttributeKey.creator.rawValue as CFString
nonisolated(unsafe) public let kSecAttrType: CFString = AttributeKey.type.rawValue as CFString
nonisolated(unsafe) public let kSecAttrLabel: CFString = AttributeKey.label.rawValue as CFString
nonisolated(unsafe) public let kSecAttrIsInvisible: CFString = AttributeKey.isInvisible.rawValue as CFString
nonisolated(unsafe) public let kSecAttrIsNegative: CFString = AttributeKey.isNegative.rawValue as CFString
nonisolated(unsafe) public let kSecAttrAccount: CFString = AttributeKey.account.rawValue as CFString
nonisolated(unsafe) public let kSecAttrService: CFString = AttributeKey.service.rawValue as CFString
nonisolated(unsafe) public let kSecAttrGeneric: CFString = AttributeKey.generic.rawValue as CFString
nonisolated(unsafe) public let kSecAttrSecurityDomain: CFString = AttributeKey.securityDomain.rawValue as CFString
nonisolated(unsafe) public let kSecAttrServer: CFString = AttributeKey.server.rawValue as CFString
nonisolated(unsafe) public let kSecAttrProtocol: CFString = AttributeKey.protocol.rawValue as CFString
nonisolated(unsafe) public let kSecAttrAuthenticationType: CFString = AttributeKey.authenticationType.rawValue as CFString
nonisolated(unsafe) public let kSecAttrPort: CFString = AttributeKey.port.rawValue as CFString
nonisolated(unsafe) public let kSecAttrPath: CFString = AttributeKey.path.rawValue as CFString
nonisolated(unsafe) public let kSecAttrSubject: CFString = AttributeKey.subject.rawValue as CFString
nonisolated(unsafe) public let kSecAttrIssuer: CFString = AttributeKey.issuer.rawValue as CFString
nonisolated(unsafe) public let kSecAttrSerialNumber: CFString = AttributeKey.serialNumber.rawValue as CFString
nonisolated(unsafe) public let kSecAttrSubjectKeyID: CFString = AttributeKey.subjectKeyID.rawValue as CFString
nonisolated(unsafe) public let kSecAttrPublicKeyHash: CFString = AttributeKey.publicKeyHash.rawValue as CFString
nonisolated(unsafe) public let kSecAttrCertificateType: CFString = AttributeKey.certificateType.rawValue as CFString
nonisolated(unsafe) public let kSecAttrCertificateEncoding: CFString = AttributeKey.certificateEncoding.rawValue as CFString
nonisolated(unsafe) public let kSecAttrKeyClass: CFString = AttributeKey.keyClass.rawValue as CFString
nonisolated(unsafe) public let kSecAttrApplicationLabel: CFString = AttributeKey.applicationLabel.rawValue as CFString
nonisolated(unsafe) public let kSecAttrIsPermanent: CFString = AttributeKey.isPermanent.rawValue as CFString
nonisolated(unsafe) public let kSecAttrIsSensitive: CFString = AttributeKey.isSensitive.rawValue as CFString
nonisolated(unsafe) public let kSecAttrIsExtractable: CFString = AttributeKey.isExtractable.rawValue as CFString
nonisolated(unsafe) public let kSecAttrApplicationTag: CFString = AttributeKey.applicationTag.rawValue as CFString
nonisolated(unsafe) public let kSecAttrKeyType: CFString = AttributeKey.keyType.rawValue as CFString
nonisolated(unsafe) public let kSecAttrKeySizeInBits: CFString = AttributeKey.keySizeInBits.rawValue as CFString
nonisolated(unsafe) public let kSecAttrEffectiveKeySize: CFString = AttributeKey.effectiveKeySize.rawValue as CFString
nonisolated(unsafe) public let kSecAttrCanEncrypt: CFString = AttributeKey.canEncrypt.rawValue as CFString
nonisolated(unsafe) public let kSecAttrCanDecrypt: CFString = AttributeKey.canDecrypt.rawValue as CFString
nonisolated(unsafe) public let kSecAttrCanDerive: CFString = AttributeKey.canDerive.rawValue as CFString
nonisolated(unsafe) public let kSecAttrCanSign: CFString = AttributeKey.canSign.rawValue as CFString
nonisolated(unsafe) public let kSecAttrCanVerify: CFString = AttributeKey.canVerify.rawValue as CFString
nonisolated(unsafe) public let kSecAttrCanWrap: CFString = AttributeKey.canWrap.rawValue as CFString
nonisolated(unsafe) public let kSecAttrCanUnwrap: CFString = AttributeKey.canUnwrap.rawValue as CFString

// MARK: Protection classes
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlocked: CFString = ProtectionClass.whenUnlocked.rawValue as CFString
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlock: CFString = ProtectionClass.afterFirstUnlock.rawValue as CFString
nonisolated(unsafe) public let kSecAttrAccessibleAlways: CFString = ProtectionClass.always.rawValue as CFString
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = ProtectionClass.whenUnlockedThisDeviceOnly.rawValue as CFString
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = ProtectionClass.afterFirstUnlockThisDeviceOnly.rawValue as CFString
nonisolated(unsafe) public let kSecAttrAccessibleAlwaysThisDeviceOnly: CFString = ProtectionClass.alwaysThisDeviceOnly.rawValue as CFString
nonisolated(unsafe) public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = ProtectionClass.whenPasscodeSetThisDeviceOnly.rawValue as CFString

// MARK: Protocols
nonisolated(unsafe) public let kSecAttrProtocolFTP: CFString = "ftp "
nonisolated(unsafe) public let kSecAttrProtocolFTPAccount: CFString = "ftpa"
nonisolated(unsafe) public let kSecAttrProtocolHTTP: CFString = "http"
nonisolated(unsafe) public let kSecAttrProtocolIRC: CFString = "irc "
nonisolated(unsafe) public let kSecAttrProtocolNNTP: CFString = "nntp"
nonisolated(unsafe) public let kSecAttrProtocolPOP3: CFString = "pop3"
nonisolated(unsafe) public let kSecAttrProtocolSMTP: CFString = "smtp"
nonisolated(unsafe) public let kSecAttrProtocolSOCKS: CFString = "sox "
nonisolated(unsafe) public let kSecAttrProtocolIMAP: CFString = "imap"
nonisolated(unsafe) public let kSecAttrProtocolLDAP: CFString = "ldap"
nonisolated(unsafe) public let kSecAttrProtocolAppleTalk: CFString = "atlk"
nonisolated(unsafe) public let kSecAttrProtocolAFP: CFString = "afp "
nonisolated(unsafe) public let kSecAttrProtocolTelnet: CFString = "teln"
nonisolated(unsafe) public let kSecAttrProtocolSSH: CFString = "ssh "
nonisolated(unsafe) public let kSecAttrProtocolFTPS: CFString = "ftps"
nonisolated(unsafe) public let kSecAttrProtocolHTTPS: CFString = "htps"
nonisolated(unsafe) public let kSecAttrProtocolHTTPProxy: CFString = "htpx"
nonisolated(unsafe) public let kSecAttrProtocolHTTPSProxy: CFString = "htsx"
nonisolated(unsafe) public let kSecAttrProtocolFTPProxy: CFString = "ftpx"
nonisolated(unsafe) public let kSecAttrProtocolSMB: CFString = "smb "
nonisolated(unsafe) public let kSecAttrProtocolRTSP: CFString = "rtsp"
nonisolated(unsafe) public let kSecAttrProtocolRTSPProxy: CFString = "rtsx"
nonisolated(unsafe) public let kSecAttrProtocolDAAP: CFString = "daap"
nonisolated(unsafe) public let kSecAttrProtocolEPPC: CFString = "eppc"
nonisolated(unsafe) public let kSecAttrProtocolIPP: CFString = "ipp "
nonisolated(unsafe) public let kSecAttrProtocolNNTPS: CFString = "ntps"
nonisolated(unsafe) public let kSecAttrProtocolLDAPS: CFString = "ldps"
nonisolated(unsafe) public let kSecAttrProtocolTelnetS: CFString = "tels"
nonisolated(unsafe) public let kSecAttrProtocolIMAPS: CFString = "imps"
nonisolated(unsafe) public let kSecAttrProtocolIRCS: CFString = "ircs"
nonisolated(unsafe) public let kSecAttrProtocolPOP3S: CFString = "pops"

// MARK: Authentication types
nonisolated(unsafe) public let kSecAttrAuthenticationTypeNTLM: CFString = "ntlm"
nonisolated(unsafe) public let kSecAttrAuthenticationTypeMSN: CFString = "msna"
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDPA: CFString = "dpaa"
nonisolated(unsafe) public let kSecAttrAuthenticationTypeRPA: CFString = "rpaa"
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPBasic: CFString = "http"
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPDigest: CFString = "httd"
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTMLForm: CFString = "form"
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDefault: CFString = "dflt"

// MARK: Search, return and value keys
nonisolated(unsafe) public let kSecMatchLimit: CFString = AttributeKey.matchLimit.rawValue as CFString
nonisolated(unsafe) public let kSecMatchLimitOne: CFString = ValueName.matchLimitOne as CFString
nonisolated(unsafe) public let kSecMatchLimitAll: CFString = ValueName.matchLimitAll as CFString
nonisolated(unsafe) public let kSecMatchCaseInsensitive: CFString = AttributeKey.matchCaseInsensitive.rawValue as CFString
nonisolated(unsafe) public let kSecReturnData: CFString = AttributeKey.returnData.rawValue as CFString
nonisolated(unsafe) public let kSecReturnAttributes: CFString = AttributeKey.returnAttributes.rawValue as CFString
nonisolated(unsafe) public let kSecReturnRef: CFString = AttributeKey.returnRef.rawValue as CFString
nonisolated(unsafe) public let kSecReturnPersistentRef: CFString = AttributeKey.returnPersistentRef.rawValue as CFString
nonisolated(unsafe) public let kSecValueData: CFString = AttributeKey.valueData.rawValue as CFString
nonisolated(unsafe) public let kSecValueRef: CFString = AttributeKey.valueRef.rawValue as CFString
nonisolated(unsafe) public let kSecValuePersistentRef: CFString = AttributeKey.valuePersistentRef.rawValue as CFString

// MARK: Use keys
nonisolated(unsafe) public let kSecUseAuthenticationUI: CFString = AttributeKey.useAuthenticationUI.rawValue as CFString
nonisolated(unsafe) public let kSecUseAuthenticationUIAllow: CFString = ValueName.authenticationUIAllow as CFString
nonisolated(unsafe) public let kSecUseAuthenticationUIFail: CFString = ValueName.authenticationUIFail as CFString
nonisolated(unsafe) public let kSecUseAuthenticationUISkip: CFString = ValueName.authenticationUISkip as CFString
nonisolated(unsafe) public let kSecUseAuthenticationContext: CFString = AttributeKey.useAuthenticationContext.rawValue as CFString
nonisolated(unsafe) public let kSecUseOperationPrompt: CFString = AttributeKey.useOperationPrompt.rawValue as CFString
nonisolated(unsafe) public let kSecUseNoAuthenticationUI: CFString = AttributeKey.useNoAuthenticationUI.rawValue as CFString
nonisolated(unsafe) public let kSecUseDataProtectionKeychain: CFString = AttributeKey.useDataProtectionKeychain.rawValue as CFString

// MARK: Key attributes' values and more match keys (so such code compiles; keys are stored as
// attributes, with no key operations)
nonisolated(unsafe) public let kSecAttrKeyClassPublic: CFString = "0"
nonisolated(unsafe) public let kSecAttrKeyClassPrivate: CFString = "1"
nonisolated(unsafe) public let kSecAttrKeyClassSymmetric: CFString = "2"
nonisolated(unsafe) public let kSecAttrKeyTypeRSA: CFString = "42"
nonisolated(unsafe) public let kSecAttrKeyTypeEC: CFString = "73"
nonisolated(unsafe) public let kSecAttrKeyTypeECSECPrimeRandom: CFString = "73"
nonisolated(unsafe) public let kSecAttrTokenID: CFString = AttributeKey.tokenID.rawValue as CFString
nonisolated(unsafe) public let kSecAttrTokenIDSecureEnclave: CFString = ValueName.tokenIDSecureEnclave as CFString
nonisolated(unsafe) public let kSecMatchPolicy: CFString = AttributeKey.matchPolicy.rawValue as CFString
nonisolated(unsafe) public let kSecMatchItemList: CFString = AttributeKey.matchItemList.rawValue as CFString
nonisolated(unsafe) public let kSecMatchSearchList: CFString = AttributeKey.matchSearchList.rawValue as CFString
nonisolated(unsafe) public let kSecMatchIssuers: CFString = AttributeKey.matchIssuers.rawValue as CFString
nonisolated(unsafe) public let kSecMatchEmailAddressIfPresent: CFString = AttributeKey.matchEmailAddressIfPresent.rawValue as CFString
nonisolated(unsafe) public let kSecMatchSubjectContains: CFString = AttributeKey.matchSubjectContains.rawValue as CFString
nonisolated(unsafe) public let kSecMatchSubjectStartsWith: CFString = AttributeKey.matchSubjectStartsWith.rawValue as CFString
nonisolated(unsafe) public let kSecMatchSubjectEndsWith: CFString = AttributeKey.matchSubjectEndsWith.rawValue as CFString
nonisolated(unsafe) public let kSecMatchSubjectWholeString: CFString = AttributeKey.matchSubjectWholeString.rawValue as CFString
nonisolated(unsafe) public let kSecMatchTrustedOnly: CFString = AttributeKey.matchTrustedOnly.rawValue as CFString
nonisolated(unsafe) public let kSecMatchValidOnDate: CFString = AttributeKey.matchValidOnDate.rawValue as CFString
nonisolated(unsafe) public let kSecMatchDiacriticInsensitive: CFString = AttributeKey.matchDiacriticInsensitive.rawValue as CFString
nonisolated(unsafe) public let kSecMatchWidthInsensitive: CFString = AttributeKey.matchWidthInsensitive.rawValue as CFString
