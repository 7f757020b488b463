// Apple's key algorithm names (SecKey.h), with the raw strings Apple's Security framework
// defines for them (its SecKey.m), so algorithms stored or compared as strings match.

/// A key algorithm, named by Apple's raw string.
public struct SecKeyAlgorithm: RawRepresentable, Hashable, Sendable {
    /// Apple's name (`algid:sign:ECDSA:message-X962:SHA256`); kept as a `String`, which is
    /// `Sendable` where an `NSString` is not, and compared by its characters.
    let name: String
    public var rawValue: CFString { name as NSString }
    public init(rawValue: CFString) { name = rawValue as String }
    public init(_ rawValue: CFString) { name = rawValue as String }

    public static let rsaSignatureRaw = SecKeyAlgorithm("algid:sign:RSA:raw")
    public static let rsaSignatureDigestPKCS1v15Raw = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15")
    public static let rsaSignatureDigestPKCS1v15SHA1 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA1")
    public static let rsaSignatureDigestPKCS1v15SHA224 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA224")
    public static let rsaSignatureDigestPKCS1v15SHA256 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA256")
    public static let rsaSignatureDigestPKCS1v15SHA384 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA384")
    public static let rsaSignatureDigestPKCS1v15SHA512 = SecKeyAlgorithm("algid:sign:RSA:digest-PKCS1v15:SHA512")
    public static let rsaSignatureMessagePKCS1v15SHA1 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA1")
    public static let rsaSignatureMessagePKCS1v15SHA224 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA224")
    public static let rsaSignatureMessagePKCS1v15SHA256 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA256")
    public static let rsaSignatureMessagePKCS1v15SHA384 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA384")
    public static let rsaSignatureMessagePKCS1v15SHA512 = SecKeyAlgorithm("algid:sign:RSA:message-PKCS1v15:SHA512")
    public static let rsaSignatureDigestPSSSHA1 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA1:SHA1:20")
    public static let rsaSignatureDigestPSSSHA224 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA224:SHA224:24")
    public static let rsaSignatureDigestPSSSHA256 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA256:SHA256:32")
    public static let rsaSignatureDigestPSSSHA384 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA384:SHA384:48")
    public static let rsaSignatureDigestPSSSHA512 = SecKeyAlgorithm("algid:sign:RSA:digest-PSS:SHA512:SHA512:64")
    public static let rsaSignatureMessagePSSSHA1 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA1:SHA1:20")
    public static let rsaSignatureMessagePSSSHA224 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA224:SHA224:24")
    public static let rsaSignatureMessagePSSSHA256 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA256:SHA256:32")
    public static let rsaSignatureMessagePSSSHA384 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA384:SHA384:48")
    public static let rsaSignatureMessagePSSSHA512 = SecKeyAlgorithm("algid:sign:RSA:message-PSS:SHA512:SHA512:64")
    public static let ecdsaSignatureRFC4754 = SecKeyAlgorithm("algid:sign:ECDSA:RFC4754")
    public static let ecdsaSignatureDigestX962 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962")
    public static let ecdsaSignatureDigestX962SHA1 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA1")
    public static let ecdsaSignatureDigestX962SHA224 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA224")
    public static let ecdsaSignatureDigestX962SHA256 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA256")
    public static let ecdsaSignatureDigestX962SHA384 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA384")
    public static let ecdsaSignatureDigestX962SHA512 = SecKeyAlgorithm("algid:sign:ECDSA:digest-X962:SHA512")
    public static let ecdsaSignatureMessageX962SHA1 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA1")
    public static let ecdsaSignatureMessageX962SHA224 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA224")
    public static let ecdsaSignatureMessageX962SHA256 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA256")
    public static let ecdsaSignatureMessageX962SHA384 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA384")
    public static let ecdsaSignatureMessageX962SHA512 = SecKeyAlgorithm("algid:sign:ECDSA:message-X962:SHA512")
    public static let rsaEncryptionRaw = SecKeyAlgorithm("algid:encrypt:RSA:raw")
    public static let rsaEncryptionPKCS1 = SecKeyAlgorithm("algid:encrypt:RSA:PKCS1")
    public static let rsaEncryptionOAEPSHA1 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA1")
    public static let rsaEncryptionOAEPSHA224 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA224")
    public static let rsaEncryptionOAEPSHA256 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA256")
    public static let rsaEncryptionOAEPSHA384 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA384")
    public static let rsaEncryptionOAEPSHA512 = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA512")
    public static let rsaEncryptionOAEPSHA1AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA1:AESGCM")
    public static let rsaEncryptionOAEPSHA224AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA224:AESGCM")
    public static let rsaEncryptionOAEPSHA256AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA256:AESGCM")
    public static let rsaEncryptionOAEPSHA384AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA384:AESGCM")
    public static let rsaEncryptionOAEPSHA512AESGCM = SecKeyAlgorithm("algid:encrypt:RSA:OAEP:SHA512:AESGCM")
    public static let eciesEncryptionStandardX963SHA1AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA1:AESGCM")
    public static let eciesEncryptionStandardX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM")
    public static let eciesEncryptionStandardX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM")
    public static let eciesEncryptionStandardX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM")
    public static let eciesEncryptionStandardX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM")
    public static let eciesEncryptionCofactorX963SHA1AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA1:AESGCM")
    public static let eciesEncryptionCofactorX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM")
    public static let eciesEncryptionCofactorX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM")
    public static let eciesEncryptionCofactorX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM")
    public static let eciesEncryptionCofactorX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM")
    public static let eciesEncryptionStandardVariableIVX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM-KDFIV")
    public static let eciesEncryptionStandardVariableIVX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV")
    public static let eciesEncryptionStandardVariableIVX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM-KDFIV")
    public static let eciesEncryptionStandardVariableIVX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM-KDFIV")
    public static let eciesEncryptionCofactorVariableIVX963SHA224AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM-KDFIV")
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV")
    public static let eciesEncryptionCofactorVariableIVX963SHA384AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM-KDFIV")
    public static let eciesEncryptionCofactorVariableIVX963SHA512AESGCM = SecKeyAlgorithm("algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM-KDFIV")
    public static let ecdhKeyExchangeStandard = SecKeyAlgorithm("algid:keyexchange:ECDH")
    public static let ecdhKeyExchangeStandardX963SHA1 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA1")
    public static let ecdhKeyExchangeStandardX963SHA224 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA224")
    public static let ecdhKeyExchangeStandardX963SHA256 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA256")
    public static let ecdhKeyExchangeStandardX963SHA384 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA384")
    public static let ecdhKeyExchangeStandardX963SHA512 = SecKeyAlgorithm("algid:keyexchange:ECDH:KDFX963:SHA512")
    public static let ecdhKeyExchangeCofactor = SecKeyAlgorithm("algid:keyexchange:ECDHC")
    public static let ecdhKeyExchangeCofactorX963SHA1 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA1")
    public static let ecdhKeyExchangeCofactorX963SHA224 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA224")
    public static let ecdhKeyExchangeCofactorX963SHA256 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA256")
    public static let ecdhKeyExchangeCofactorX963SHA384 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA384")
    public static let ecdhKeyExchangeCofactorX963SHA512 = SecKeyAlgorithm("algid:keyexchange:ECDHC:KDFX963:SHA512")
}

/// What a key is asked to do (`SecKeyIsAlgorithmSupported`).
public enum SecKeyOperationType: Int, Sendable {
    case sign = 0, verify = 1, encrypt = 2, decrypt = 3, keyExchange = 4
}

/// Parameters of `SecKeyCopyKeyExchangeResult`.
public typealias SecKeyKeyExchangeParameter = CFString
nonisolated(unsafe) public let kSecKeyKeyExchangeParameterRequestedSize: SecKeyKeyExchangeParameter = "requestedSize"
nonisolated(unsafe) public let kSecKeyKeyExchangeParameterSharedInfo: SecKeyKeyExchangeParameter = "sharedInfo"

/// The per-key dictionaries of `SecKeyCreateRandomKey`.
nonisolated(unsafe) public let kSecPrivateKeyAttrs: CFString = "private"
nonisolated(unsafe) public let kSecPublicKeyAttrs: CFString = "public"
