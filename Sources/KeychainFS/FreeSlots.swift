/// The free slots of the inode table, lowest first (a binary min-heap): new names fill the
/// array from its start, so that the names left after a large listing is forgotten sit low and
/// the array's free tail can go. Given the most recently freed slot instead, a name looked up
/// while a prune's forgets arrive could take one near the end and hold the whole array.
struct FreeSlots {
    private var heap: [Int32] = []

    var count: Int { heap.count }

    mutating func insert(_ slot: Int32) {
        heap.append(slot)
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard heap[parent] > heap[i] else { break }
            heap.swapAt(parent, i)
            i = parent
        }
    }

    /// The lowest free slot, removed.
    mutating func popLowest() -> Int32? {
        guard let last = heap.popLast() else { return nil }
        guard !heap.isEmpty else { return last }
        let lowest = heap[0]
        heap[0] = last
        siftDown(0)
        return lowest
    }

    /// Drops the slots at `end` and past it (the array's tail went), in a buffer of the new size.
    mutating func removeAll(from end: Int32) {
        heap = heap.filter { $0 < end }
        for i in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
    }

    private mutating func siftDown(_ start: Int) {
        var i = start
        while true {
            let left = 2 * i + 1, right = left + 1
            var lowest = i
            if left < heap.count, heap[left] < heap[lowest] { lowest = left }
            if right < heap.count, heap[right] < heap[lowest] { lowest = right }
            if lowest == i { return }
            heap.swapAt(i, lowest)
            i = lowest
        }
    }
}
