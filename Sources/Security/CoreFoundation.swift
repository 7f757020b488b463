@_exported import Foundation

// The CoreFoundation spellings that keychain code uses, over Foundation's classes: on Linux
// `query as CFDictionary` is `query as NSDictionary`, and `kSecClass as String` bridges as on
// Apple's platforms.
public typealias CFString = NSString
public typealias CFDictionary = NSDictionary
public typealias CFMutableDictionary = NSMutableDictionary
public typealias CFData = NSData
public typealias CFArray = NSArray
public typealias CFBoolean = NSNumber
public typealias CFNumber = NSNumber
public typealias CFDate = NSDate
public typealias CFError = NSError
public typealias CFTypeRef = AnyObject
public typealias CFAllocator = NSObject
public typealias CFOptionFlags = UInt
public typealias CFIndex = Int
public typealias CFErrorDomain = CFString

extension NSData {
    /// Calls `body` with the bytes where they are. Bridging to `Data` (`as Data`) copies them
    /// one at a time on Linux (about 56 ns a byte: 3.7 ms for 64 KiB).
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: length > 0 ? bytes : nil, count: length))
    }
}

/// Implicitly unwrapped, as Apple declares them, so `kCFBooleanTrue` and `kCFBooleanTrue!` both work.
public let kCFBooleanTrue: CFBoolean! = NSNumber(value: true)
public let kCFBooleanFalse: CFBoolean! = NSNumber(value: false)
nonisolated(unsafe) public let kCFAllocatorDefault: CFAllocator? = nil

public func CFErrorGetCode(_ error: CFError) -> CFIndex { error.code }
public func CFErrorGetDomain(_ error: CFError) -> CFErrorDomain { error.domain as NSString }
public func CFErrorCopyUserInfo(_ error: CFError) -> CFDictionary? { error.userInfo as NSDictionary }
public func CFErrorCopyDescription(_ error: CFError) -> CFString? { error.localizedDescription as NSString }

// On Apple's platforms an NSString in an `AnyHashable` hashes and compares as the Swift String
// it holds, so `attributes[kSecAttrAccount]` finds the key "acct" in a `[AnyHashable: Any]` and
// dictionaries holding kSec constants equal those holding the same strings. Foundation on Linux
// lacks this; without it keychain code cast to `[AnyHashable: Any]` misses keys it finds on Apple.
extension NSString: @retroactive _HasCustomAnyHashableRepresentation {
    public func _toCustomAnyHashable() -> AnyHashable? { AnyHashable(self as String) }
}
