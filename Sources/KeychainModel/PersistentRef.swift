/// A persistent reference: the 4-byte class name followed by the item's 16-byte identifier.
public struct PersistentRef: Hashable, Sendable {
    public let itemClass: ItemClass
    public let uuid: [UInt8]

    package init(itemClass: ItemClass, uuid: [UInt8]) {
        self.itemClass = itemClass
        self.uuid = uuid
    }

    public init?(bytes: [UInt8]) {
        guard bytes.count == 20,
              let c = ItemClass(rawValue: String(decoding: bytes[0..<4], as: UTF8.self))
        else { return nil }
        itemClass = c
        uuid = Array(bytes[4...])
    }

    public var bytes: [UInt8] { Array(itemClass.rawValue.utf8) + uuid }

    /// The uuid's bytes as one block rather than one by one (an array's own hashing): the
    /// daemon hashes a reference for every item a search returns and every file open (the
    /// audit's repeat counts).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(itemClass)
        uuid.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
