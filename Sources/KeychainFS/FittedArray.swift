extension Array {
    /// A copy in a buffer of its size, for an array that grew large and is now kept long or
    /// emptied: `Array(self)` and `Array(self[...])` share the buffer, capacity and all.
    func fitted() -> [Element] {
        var copy: [Element] = []
        copy.reserveCapacity(count)
        copy.append(contentsOf: self)
        return copy
    }
}
