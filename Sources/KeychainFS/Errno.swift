import Glibc
import KeychainCore

/// The errno a keychain status becomes at the file interface (docs/filesystem.md).
func errnoFor(_ error: Error) -> Int32 {
    if error is Denied { return EACCES }
    if isAllocationFailure(error) { return ENOMEM }  // out of guarded memory: KeychainStatus.allocate too
    guard let status = KeychainStatus(known: error) else { return EIO }
    switch status {
    case .itemNotFound, .interactionNotAllowed, .noSuchKeychain: return ENOENT
    case .missingEntitlement, .authFailed, .userCanceled: return EACCES
    case .duplicateItem: return EEXIST
    case .param, .noSuchAttr: return EINVAL
    case .readOnly: return EROFS
    case .diskFull: return ENOSPC
    case .decode: return EIO
    default: return EIO
    }
}

/// A marker error: the operation is refused with EACCES.
struct Denied: Error {}
