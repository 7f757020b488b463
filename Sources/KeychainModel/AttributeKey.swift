/// The name of an item attribute or query key: Apple's raw string (`svce`, `r_Data`), which is
/// what the vault, backups, sync records and the socket protocol store. This file is the one
/// table of those names; Security's `kSec*` constants are built from it.
///
/// A string literal converts to a key, so tests and callers of KeychainCore may write Apple's
/// raw names; inside Sources every key is one of the named constants below.
public struct AttributeKey: RawRepresentable, Hashable, Comparable, Sendable, ExpressibleByStringLiteral,
                            CustomStringConvertible {
    public let rawValue: String
    /// A short plain name's bytes in one integer, made once; 0 for any other name. Keys are
    /// compared and hashed many times a request (every dictionary lookup), and Apple's names
    /// are short and plain: for them a compare is this word's and a hash feeds only it.
    private let word: UInt64

    /// The raw name, so a key reads in text (file names, messages, output) as it always has.
    public var description: String { rawValue }

    public init(rawValue: String) {
        self.rawValue = rawValue
        word = Self.word(of: rawValue)
    }
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    /// Equal as their names are (`String`'s equality, which is canonical equivalence).
    public static func == (a: AttributeKey, b: AttributeKey) -> Bool {
        // Equal words: the same plain name. Different words: two different plain names, or a
        // plain name and another, which no other name equals (see `word(of:)`).
        if a.word != b.word { return false }
        return a.word != 0 || a.rawValue == b.rawValue
    }

    public func hash(into hasher: inout Hasher) {
        if word != 0 { hasher.combine(word) } else { hasher.combine(rawValue) }
    }

    /// The bytes of a plain name of 1 to 8 bytes, the first in the lowest byte; 0 for any other.
    /// Plain: ASCII without NUL (so zero padding is unambiguous) and without `K`, `;` and `` ` ``,
    /// the only ASCII characters another scalar is canonically equivalent to (U+212A KELVIN
    /// SIGN, U+037E GREEK QUESTION MARK, U+1FEF GREEK VARIA: Unicode's canonical singletons onto
    /// ASCII). So a name equal as a `String` to a plain name has its very bytes, and the word
    /// agrees with `String`'s equality: equal names have equal words, and one word names one
    /// plain name.
    private static func word(of name: String) -> UInt64 {
        var name = name
        return name.withUTF8 { b in
            guard b.count >= 1, b.count <= 8 else { return 0 }
            var v: UInt64 = 0
            for i in 0..<b.count {
                let c = b[i]
                guard c != 0, c < 0x80, c != UInt8(ascii: "K"), c != UInt8(ascii: ";"), c != UInt8(ascii: "`") else { return 0 }
                v |= UInt64(c) << (8 * UInt64(i))
            }
            return v
        }
    }

    /// Ordered by the raw name: attribute blobs and socket records are written in this order.
    public static func < (a: AttributeKey, b: AttributeKey) -> Bool { a.rawValue < b.rawValue }

    /// The name with this prefix: a family of query keys (`r_`, `m_`, `u_`, `v_`).
    public func hasPrefix(_ family: Family) -> Bool {
        mayHaveFamilyPrefix && rawValue.hasPrefix(family.rawValue)
    }

    /// False when the name has no family's prefix: every family's prefix is ASCII ending in
    /// `_`, which composes with nothing, so a name with no `_` in its first two bytes has none
    /// of them (most names, decided without String's comparison). True does not say it has one.
    public var mayHaveFamilyPrefix: Bool {
        let underscore = UInt8(ascii: "_")
        if word != 0 { return word & 0xFF == UInt64(underscore) || (word >> 8) & 0xFF == UInt64(underscore) }
        return rawValue.utf8.withContiguousStorageIfAvailable { b in
            b.count > 0 && (b[0] == underscore || (b.count > 1 && b[1] == underscore))
        } ?? true
    }

    /// The families of non-attribute query keys, by the prefix Apple gives them.
    public enum Family: String, Sendable {
        case value = "v_", `return` = "r_", match = "m_", use = "u_"
        /// The store's own attributes, never returned to a caller.
        case store = "_"
    }
}

// MARK: Class (kSecClass)
extension AttributeKey {
    /// `kSecClass`: the item class (`ItemClass` raw values, or `ValueName.identityClass`).
    public static let `class` = AttributeKey(rawValue: "class")
}

// MARK: Attributes every class has (kSecAttr*)
extension AttributeKey {
    /// `kSecAttrAccessible`: the protection class (`ProtectionClass` raw values).
    public static let accessible = AttributeKey(rawValue: "pdmn")
    /// `kSecAttrAccessControl`: a protection class with presence flags (`AccessControl`).
    public static let accessControl = AttributeKey(rawValue: "accc")
    /// `kSecAttrAccessGroup`: the access group, owner/group/mode on this platform.
    public static let accessGroup = AttributeKey(rawValue: "agrp")
    /// `kSecAttrSynchronizable`: shared through fleet sync; `ValueName.synchronizableAny` in a query.
    public static let synchronizable = AttributeKey(rawValue: "sync")
    /// `kSecAttrCreationDate`, set by the store.
    public static let creationDate = AttributeKey(rawValue: "cdat")
    /// `kSecAttrModificationDate`, set by the store.
    public static let modificationDate = AttributeKey(rawValue: "mdat")
    /// `kSecAttrLabel`: the user-visible label; a key's or certificate's file name.
    public static let label = AttributeKey(rawValue: "labl")
    /// `kSecAttrDescription`.
    public static let description = AttributeKey(rawValue: "desc")
    /// `kSecAttrComment`.
    public static let comment = AttributeKey(rawValue: "icmt")
    /// `kSecAttrCreator`: a four-character code as a number.
    public static let creator = AttributeKey(rawValue: "crtr")
    /// `kSecAttrType` (a password's four-character code) and `kSecAttrKeyType` (a key's algorithm).
    public static let type = AttributeKey(rawValue: "type")
    /// `kSecAttrIsInvisible`.
    public static let isInvisible = AttributeKey(rawValue: "invi")
    /// `kSecAttrIsNegative`.
    public static let isNegative = AttributeKey(rawValue: "nega")
    /// `kSecAttrAlias` (certificates, keys).
    public static let alias = AttributeKey(rawValue: "alis")
    /// `kSecAttrTokenID`: a hardware token; `ValueName.tokenIDSecureEnclave`, the TPM (docs/tpm.md).
    public static let tokenID = AttributeKey(rawValue: "tkid")
}

// MARK: Passwords
extension AttributeKey {
    /// `kSecAttrAccount`: a password's account; the file name under its directory.
    public static let account = AttributeKey(rawValue: "acct")
    /// `kSecAttrService`: a generic password's service; its directory.
    public static let service = AttributeKey(rawValue: "svce")
    /// `kSecAttrGeneric`: free data of a generic password.
    public static let generic = AttributeKey(rawValue: "gena")
    /// `kSecAttrSecurityDomain` (internet passwords).
    public static let securityDomain = AttributeKey(rawValue: "sdmn")
    /// `kSecAttrServer`: an internet password's server; its directory under `/.internet`.
    public static let server = AttributeKey(rawValue: "srvr")
    /// `kSecAttrProtocol`: a four-character code (`kSecAttrProtocolHTTPS`).
    public static let `protocol` = AttributeKey(rawValue: "ptcl")
    /// `kSecAttrAuthenticationType`: a four-character code.
    public static let authenticationType = AttributeKey(rawValue: "atyp")
    /// `kSecAttrPort`.
    public static let port = AttributeKey(rawValue: "port")
    /// `kSecAttrPath`.
    public static let path = AttributeKey(rawValue: "path")
}

// MARK: Certificates
extension AttributeKey {
    /// `kSecAttrCertificateType`.
    public static let certificateType = AttributeKey(rawValue: "ctyp")
    /// `kSecAttrCertificateEncoding`.
    public static let certificateEncoding = AttributeKey(rawValue: "cenc")
    /// `kSecAttrSubject`: the subject's DER.
    public static let subject = AttributeKey(rawValue: "subj")
    /// `kSecAttrIssuer`: the issuer's DER.
    public static let issuer = AttributeKey(rawValue: "issr")
    /// `kSecAttrSerialNumber`: the serial number's DER content.
    public static let serialNumber = AttributeKey(rawValue: "slnr")
    /// `kSecAttrSubjectKeyID`.
    public static let subjectKeyID = AttributeKey(rawValue: "skid")
    /// `kSecAttrPublicKeyHash`: equal to the matching key's `applicationLabel`.
    public static let publicKeyHash = AttributeKey(rawValue: "pkhh")
}

// MARK: Keys
extension AttributeKey {
    /// `kSecAttrKeyClass`: 0 public, 1 private, 2 symmetric.
    public static let keyClass = AttributeKey(rawValue: "kcls")
    /// `kSecAttrApplicationLabel`: the SHA-1 of the public key.
    public static let applicationLabel = AttributeKey(rawValue: "klbl")
    /// `kSecAttrApplicationTag`.
    public static let applicationTag = AttributeKey(rawValue: "atag")
    /// `kSecAttrKeyType`: Apple's algorithm number (42 RSA, 73 EC); the same name as `type`.
    public static let keyType = AttributeKey.type
    /// `kSecAttrKeySizeInBits`.
    public static let keySizeInBits = AttributeKey(rawValue: "bsiz")
    /// `kSecAttrEffectiveKeySize`.
    public static let effectiveKeySize = AttributeKey(rawValue: "esiz")
    /// A key's start date (Apple's schema, no public constant).
    public static let startDate = AttributeKey(rawValue: "sdat")
    /// A key's end date (Apple's schema, no public constant).
    public static let endDate = AttributeKey(rawValue: "edat")
    /// `kSecAttrIsPermanent`: store the key as an item.
    public static let isPermanent = AttributeKey(rawValue: "perm")
    /// A key's private flag (Apple's schema).
    public static let isPrivate = AttributeKey(rawValue: "priv")
    /// A key's modifiable flag (Apple's schema).
    public static let isModifiable = AttributeKey(rawValue: "modi")
    /// `kSecAttrIsSensitive`.
    public static let isSensitive = AttributeKey(rawValue: "sens")
    /// A key's always-sensitive flag (Apple's schema).
    public static let alwaysSensitive = AttributeKey(rawValue: "asen")
    /// `kSecAttrIsExtractable`: 0 keeps the private key's bytes in the daemon.
    public static let isExtractable = AttributeKey(rawValue: "extr")
    /// A key's never-extractable flag (Apple's schema).
    public static let neverExtractable = AttributeKey(rawValue: "next")
    /// `kSecAttrCanEncrypt`.
    public static let canEncrypt = AttributeKey(rawValue: "encr")
    /// `kSecAttrCanDecrypt`.
    public static let canDecrypt = AttributeKey(rawValue: "decr")
    /// `kSecAttrCanDerive`.
    public static let canDerive = AttributeKey(rawValue: "drve")
    /// `kSecAttrCanSign`.
    public static let canSign = AttributeKey(rawValue: "sign")
    /// `kSecAttrCanVerify`.
    public static let canVerify = AttributeKey(rawValue: "vrfy")
    /// A key's sign-recover flag (Apple's schema).
    public static let canSignRecover = AttributeKey(rawValue: "snrc")
    /// A key's verify-recover flag (Apple's schema).
    public static let canVerifyRecover = AttributeKey(rawValue: "vyrc")
    /// `kSecAttrCanWrap`.
    public static let canWrap = AttributeKey(rawValue: "wrap")
    /// `kSecAttrCanUnwrap`.
    public static let canUnwrap = AttributeKey(rawValue: "unwp")
    /// A key item's public key in Apple's external representation, set by the daemon when the
    /// item is added (ours, not Apple's): a client holds a stored key's public half with it.
    public static let publicKey = AttributeKey(rawValue: "pubk")
}

// MARK: The store's own (never returned)
extension AttributeKey {
    /// When the secret last changed (a file's mtime), apart from `modificationDate`.
    public static let secretModificationDate = AttributeKey(rawValue: "_smod")
}

// MARK: Values (kSecValue*)
extension AttributeKey {
    /// `kSecValueData`: the secret; never an attribute, always in guarded memory.
    public static let valueData = AttributeKey(rawValue: "v_Data")
    /// `kSecValueRef`: a `SecKey` or `SecCertificate` to store.
    public static let valueRef = AttributeKey(rawValue: "v_Ref")
    /// `kSecValuePersistentRef`: names one item (`PersistentRef`).
    public static let valuePersistentRef = AttributeKey(rawValue: "v_PersistentRef")
}

// MARK: Returns (kSecReturn*)
extension AttributeKey {
    /// `kSecReturnData`: return the secret.
    public static let returnData = AttributeKey(rawValue: "r_Data")
    /// `kSecReturnAttributes`: return the attributes.
    public static let returnAttributes = AttributeKey(rawValue: "r_Attributes")
    /// `kSecReturnRef`: return a `SecKey` or `SecCertificate`.
    public static let returnRef = AttributeKey(rawValue: "r_Ref")
    /// `kSecReturnPersistentRef`: return the persistent reference.
    public static let returnPersistentRef = AttributeKey(rawValue: "r_PersistentRef")
}

// MARK: Search (kSecMatch*)
extension AttributeKey {
    /// `kSecMatchLimit`: `ValueName.matchLimitOne`, `matchLimitAll` or a count.
    public static let matchLimit = AttributeKey(rawValue: "m_Limit")
    /// `kSecMatchCaseInsensitive` (accepted, ignored).
    public static let matchCaseInsensitive = AttributeKey(rawValue: "m_CaseInsensitive")
    /// `kSecMatchPolicy`: errSecParam in a search, as no `SecPolicy` can be sent here.
    public static let matchPolicy = AttributeKey(rawValue: "m_Policy")
    /// `kSecMatchItemList` (accepted, ignored).
    public static let matchItemList = AttributeKey(rawValue: "m_ItemList")
    /// `kSecMatchSearchList` (accepted, ignored).
    public static let matchSearchList = AttributeKey(rawValue: "m_SearchList")
    /// `kSecMatchIssuers` (accepted, ignored).
    public static let matchIssuers = AttributeKey(rawValue: "m_Issuers")
    /// `kSecMatchEmailAddressIfPresent` (accepted, ignored).
    public static let matchEmailAddressIfPresent = AttributeKey(rawValue: "m_EmailAddressIfPresent")
    /// `kSecMatchSubjectContains` (accepted, ignored).
    public static let matchSubjectContains = AttributeKey(rawValue: "m_SubjectContains")
    /// `kSecMatchSubjectStartsWith` (accepted, ignored).
    public static let matchSubjectStartsWith = AttributeKey(rawValue: "m_SubjectStartsWith")
    /// `kSecMatchSubjectEndsWith` (accepted, ignored).
    public static let matchSubjectEndsWith = AttributeKey(rawValue: "m_SubjectEndsWith")
    /// `kSecMatchSubjectWholeString` (accepted, ignored).
    public static let matchSubjectWholeString = AttributeKey(rawValue: "m_SubjectWholeString")
    /// `kSecMatchTrustedOnly`: a boolean in a search (else errSecParam), not applied.
    public static let matchTrustedOnly = AttributeKey(rawValue: "m_TrustedOnly")
    /// `kSecMatchValidOnDate`: a date in a search (else errSecParam), not applied.
    public static let matchValidOnDate = AttributeKey(rawValue: "m_ValidOnDate")
    /// `kSecMatchDiacriticInsensitive` (accepted, ignored).
    public static let matchDiacriticInsensitive = AttributeKey(rawValue: "m_DiacriticInsensitive")
    /// `kSecMatchWidthInsensitive` (accepted, ignored).
    public static let matchWidthInsensitive = AttributeKey(rawValue: "m_WidthInsensitive")
}

// MARK: Use (kSecUse*): hints for the daemon, never stored
extension AttributeKey {
    /// `kSecUseAuthenticationUI`: `ValueName.authenticationUIAllow`, `Fail` or `Skip`.
    public static let useAuthenticationUI = AttributeKey(rawValue: "u_AuthUI")
    /// `kSecUseAuthenticationContext`.
    public static let useAuthenticationContext = AttributeKey(rawValue: "u_AuthCtx")
    /// `kSecUseOperationPrompt`: the text of a presence prompt.
    public static let useOperationPrompt = AttributeKey(rawValue: "u_OpPrompt")
    /// `kSecUseNoAuthenticationUI`: fail rather than ask for presence.
    public static let useNoAuthenticationUI = AttributeKey(rawValue: "u_NoAuthUI")
    /// `kSecUseDataProtectionKeychain`: selects the keychain on macOS; ignored here.
    public static let useDataProtectionKeychain = AttributeKey(rawValue: "nleg")
}

/// Apple's special values of keys above, by their raw strings.
public enum ValueName {
    /// `kSecAttrSynchronizableAny`: a query's `synchronizable` that matches both.
    public static let synchronizableAny = "syna"
    /// `kSecMatchLimitOne`.
    public static let matchLimitOne = "m_LimitOne"
    /// `kSecMatchLimitAll`.
    public static let matchLimitAll = "m_LimitAll"
    /// `kSecClassIdentity`: a certificate joined with its private key; never stored as one item.
    public static let identityClass = "idnt"
    /// `kSecUseAuthenticationUIAllow`.
    public static let authenticationUIAllow = "u_AuthUIA"
    /// `kSecUseAuthenticationUIFail`.
    public static let authenticationUIFail = "u_AuthUIF"
    /// `kSecUseAuthenticationUISkip`: leave out the items that would need presence.
    public static let authenticationUISkip = "u_AuthUIS"
    /// `kSecAttrTokenIDSecureEnclave`: a key made and used inside the TPM (docs/tpm.md).
    public static let tokenIDSecureEnclave = "com.apple.setoken"
}

extension AttributeValue {
    /// An item class as the value of `.class`.
    public static func itemClass(_ c: ItemClass) -> AttributeValue { .string(c.rawValue) }
    /// A protection class as the value of `.accessible`.
    public static func protection(_ p: ProtectionClass) -> AttributeValue { .string(p.rawValue) }
    /// `kSecAttrSynchronizableAny` as a value.
    public static let synchronizableAny = AttributeValue.string(ValueName.synchronizableAny)
    /// `kSecMatchLimitOne` as a value.
    public static let matchLimitOne = AttributeValue.string(ValueName.matchLimitOne)
    /// `kSecMatchLimitAll` as a value.
    public static let matchLimitAll = AttributeValue.string(ValueName.matchLimitAll)
    /// `kSecUseAuthenticationUIAllow` as a value.
    public static let authenticationUIAllow = AttributeValue.string(ValueName.authenticationUIAllow)
    /// `kSecUseAuthenticationUISkip` as a value.
    public static let authenticationUISkip = AttributeValue.string(ValueName.authenticationUISkip)
}

extension AttributeKey {
    /// keychainfs's own search key for generic passwords: Secret Service attribute pairs that must
    /// all be among an item's (`SecretServicePairs`), as `.data` of `SecretServicePairs.encode`.
    /// The vault finds them through blind tokens (docs/vault-format.md).
    public static let matchSecretAttributes = AttributeKey(rawValue: "m_SecretAttributes")
}
