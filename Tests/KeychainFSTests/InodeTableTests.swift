import KeychainCore
@testable import KeychainFS
import XCTest

/// Inode numbers as the kernel sees them: one per name while it holds it, given back by forget.
final class InodeTableTests: XCTestCase {
    func item(_ account: String) -> Node { .item(ItemName(service: Array("svc".utf8), account: Array(account.utf8))) }

    func testANameKeepsItsNumberUntilForgottenAndNoNumberNamesTwoFiles() {
        let t = InodeTable()
        let a = t.lookedUp(item("a"))
        XCTAssertEqual(t.lookedUp(item("a")), a)
        XCTAssertEqual(t.existing(item("a")), a)
        XCTAssertEqual(t.node(a), item("a"))
        t.forget(a, 1)
        XCTAssertEqual(t.node(a), item("a"), "one of two lookups forgotten")
        t.forget(a, 1)
        XCTAssertNil(t.node(a))
        XCTAssertNil(t.existing(item("a")))
        let b = t.lookedUp(item("b"))
        XCTAssertNotEqual(b, a, "a forgotten number names no other file")
        XCTAssertEqual(t.node(b), item("b"))
        XCTAssertNotEqual(t.lookedUp(item("c")), b)
        XCTAssertEqual(t.node(InodeTable.rootIno), .root)
        t.forget(InodeTable.rootIno, 5)
        XCTAssertEqual(t.node(InodeTable.rootIno), .root, "the root is never forgotten")
    }

    func testRenameMovesTheNumberAndTheReplacedOneStaysTakenUntilForgotten() {
        let t = InodeTable()
        let a = t.lookedUp(item("a")), b = t.lookedUp(item("b"))
        t.rename(item("a"), to: item("b"))
        XCTAssertEqual(t.existing(item("b")), a)
        XCTAssertNil(t.existing(item("a")))
        XCTAssertNil(t.node(b), "the replaced file's number names nothing")
        let c = t.lookedUp(item("c"))
        XCTAssertNotEqual(c, b, "a number the kernel still holds is not given out")
        t.forget(b, 1)
        XCTAssertEqual(t.node(a), item("b"))
        XCTAssertEqual(t.node(c), item("c"))
    }

    func testTheIdleSweepNamesOnlyWhatNoRequestNamedSinceTheLastSweep() {
        let t = InodeTable()
        let numbers = (0..<10).map { t.lookedUp(item("user\($0)")) }
        XCTAssertEqual(t.idleSinceLastSweep(minimum: 11), [], "10 names and the root: not past the threshold, no sweep")
        XCTAssertEqual(t.idleSinceLastSweep(minimum: 4), [], "every name was just looked up")
        _ = t.node(numbers[3])
        _ = t.lookedUp(item("user7"))
        _ = t.node(InodeTable.rootIno)
        XCTAssertEqual(Set(t.idleSinceLastSweep(minimum: 4)), Set(numbers).subtracting([numbers[3], numbers[7]]))
        XCTAssertEqual(Set(t.idleSinceLastSweep(minimum: 4)), Set(numbers), "the marks were cleared")
        t.forget(numbers[0], 1)
        XCTAssertFalse(t.idleSinceLastSweep(minimum: 4).contains(numbers[0]), "a forgotten name is not named")
        XCTAssertEqual(Set(t.allButRoot()), Set(numbers.dropFirst()))
    }

    func testAHundredThousandNamesForgottenLeaveOnlyTheRoot() {
        let t = InodeTable()
        let names = (0..<100_000).map { item("user\($0)") }
        var numbers: [UInt64] = []
        for n in names { numbers.append(t.lookedUp(n)) }
        XCTAssertEqual(Set(numbers).count, names.count)
        XCTAssertEqual(t.count, names.count + 1)
        for (i, n) in names.enumerated() where i % 997 == 0 {
            XCTAssertEqual(t.existing(n), numbers[i])
            XCTAssertEqual(t.node(numbers[i]), n)
        }
        // Forgotten in the kernel's order, which is no order: odd ones first, then the rest.
        for (i, ino) in numbers.enumerated() where i % 2 == 1 { t.forget(ino, 1) }
        XCTAssertEqual(t.count, names.count / 2 + 1)
        XCTAssertEqual(t.existing(names[2]), numbers[2])
        XCTAssertNil(t.existing(names[3]))
        for (i, ino) in numbers.enumerated().reversed() where i % 2 == 0 { t.forget(ino, 1) }
        XCTAssertEqual(t.count, 1)
        XCTAssertNil(t.existing(names[0]))
        let again = t.lookedUp(item("user0"))
        XCTAssertFalse(numbers.contains(again), "a forgotten number names no other file")
        XCTAssertEqual(t.node(again), item("user0"))
        XCTAssertNil(t.node(numbers[0]), "the old number of the slot names nothing")
    }

    /// A lock prunes every name; the directory is looked up again while the forgets arrive. It
    /// takes the lowest free slot, not the last one freed, so once the listing is forgotten the
    /// array's memory goes.
    func testANameLookedUpWhileAListingIsForgottenLeavesTheArraySmall() {
        let t = InodeTable()
        let dir = Node.service(.genericPassword, Array("svc".utf8))
        let oldDir = t.lookedUp(dir)
        let numbers = (0..<100_000).map { t.lookedUp(item("user\($0)")) }
        XCTAssertGreaterThan(t.slotCapacity, 100_000)
        t.forget(oldDir, 1)
        for ino in numbers.prefix(50_000) { t.forget(ino, 1) }
        let newDir = t.lookedUp(dir)
        for ino in numbers.dropFirst(50_000) { t.forget(ino, 1) }
        XCTAssertEqual(t.count, 2)
        XCTAssertNotEqual(newDir, oldDir, "a forgotten number names no other file")
        XCTAssertEqual(t.node(newDir), dir)
        XCTAssertNil(t.node(oldDir))
        XCTAssertLessThanOrEqual(t.slotCapacity, 4096, "the array shrank to the names still held")
        XCTAssertNotEqual(t.lookedUp(item("user1")), numbers[1])
    }

    func testServiceRenameMovesEveryItemUnderIt() {
        let t = InodeTable()
        let dir = Node.service(.genericPassword, Array("svc".utf8))
        let d = t.lookedUp(dir), a = t.lookedUp(item("a"))
        t.renameService(Directory(itemClass: .genericPassword, service: Array("svc".utf8)), to: Array("new".utf8))
        XCTAssertEqual(t.existing(.service(.genericPassword, Array("new".utf8))), d)
        XCTAssertEqual(t.existing(.item(ItemName(service: Array("new".utf8), account: Array("a".utf8)))), a)
        XCTAssertEqual(t.directories().map(\.0), [d])
    }

    /// A closed listing's prune asks for the names of its directory the kernel holds then:
    /// an item's directory is its service's, a service's is the root.
    func testChildrenAreTheNodesListedInADirectory() {
        let t = InodeTable()
        let svc = Node.service(.genericPassword, Array("svc".utf8)), other = Node.service(.genericPassword, Array("other".utf8))
        let s = t.lookedUp(svc), o = t.lookedUp(other)
        let a = t.lookedUp(item("a")), b = t.lookedUp(item("b"))
        let elsewhere = t.lookedUp(.item(ItemName(service: Array("other".utf8), account: Array("a".utf8))))
        XCTAssertEqual(Set(t.children(of: svc)), [a, b])
        XCTAssertEqual(t.children(of: other), [elsewhere])
        XCTAssertEqual(Set(t.children(of: .root)), [s, o])
        t.forget(a, 1)
        XCTAssertEqual(t.children(of: svc), [b], "a forgotten name is not the kernel's any more")
        XCTAssertEqual(t.children(of: item("b")), [], "a file lists nothing")
    }
}
