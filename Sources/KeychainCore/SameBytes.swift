/// Whether two buffers hold the same bytes, compared eight at a time: tokens, sealed boxes and
/// associated data are compared on every lookup. Not constant-time: for values that are no
/// secret (tokens are stored in the clear; a sealed box is its ciphertext).
func sameBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    let count = a.count
    var i = 0
    while i + 8 <= count {
        if a.loadUnaligned(fromByteOffset: i, as: UInt64.self) != b.loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
        i += 8
    }
    while i < count {
        if a[i] != b[i] { return false }
        i += 1
    }
    return true
}
