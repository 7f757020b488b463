import KeychainModel

public typealias OSStatus = Int32

/// Apple's sentence for a status (`SecCopyErrorMessageString`); nil for an unknown code.
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString? {
    let message = KeychainStatus(rawValue: status).message
    return message.hasPrefix("OSStatus ") ? nil : message as NSString
}
