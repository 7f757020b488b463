import KeychainCore
@testable import KeychainFS
import XCTest

/// A listing's packed names give back what was put in: each name once, its node and its facts.
final class ListedNamesTests: XCTestCase {
    let svc = Array("svc".utf8)

    func listed(_ n: ItemName, size: Int = 5, group: String = "default") -> Listed {
        Listed(name: FileNames.fileName(of: n), node: .item(n), dotIno: 0,
               file: FileFacts(group: group, size: size, mtime: 1_700_000_000, ctime: 1_700_000_001, writable: true))
    }

    func testNamesNodesAndFactsComeBackAndANameIsListedOnce() {
        let directory = Directory(itemClass: .genericPassword, service: svc)
        var names = ListedNames(directory: directory)
        let plain = ItemName(service: svc, account: Array("app".utf8))
        var grouped = plain
        grouped.group = "team"
        XCTAssertTrue(names.append(listed(plain, size: 7)))
        XCTAssertFalse(names.append(listed(plain, size: 9, group: "team")), "the plain name is listed already")
        XCTAssertTrue(names.append(listed(grouped, group: "team")))
        names.finish()
        XCTAssertEqual(names.count, 2)
        XCTAssertEqual(names[0].name, Array("app".utf8))
        XCTAssertEqual(names[0].node, .item(plain))
        XCTAssertEqual(names[0].file?.size, 7)
        XCTAssertEqual(names[0].file?.group, "default")
        XCTAssertEqual(names[0].file?.mtime, 1_700_000_000)
        XCTAssertEqual(names[0].file?.ctime, 1_700_000_001)
        XCTAssertEqual(names[1].node, .item(grouped), "a name with a group keeps its whole node")
        XCTAssertEqual(names[1].file?.group, "team")
        XCTAssertEqual(names.node(at: 1), .item(grouped))
    }

    /// A finished listing is kept until releasedir: its buffers lose the room they grew by.
    func testAFinishedListingsBuffersHoldWhatTheyUse() {
        var names = ListedNames(directory: Directory(itemClass: .genericPassword, service: svc))
        for i in 0..<30_000 { _ = names.append(listed(ItemName(service: svc, account: Array("user\(i)".utf8)))) }
        names.finish()
        let (taken, used) = names.bufferBytes
        XCTAssertGreaterThan(used, 30_000 * 16)
        XCTAssertLessThan(taken - used, 16 << 10, "room to grow left in the buffers")
        XCTAssertEqual(names[29_999].name, Array("user29999".utf8))
    }

    func testInternetNamesWithQualifiersAndDirectoriesKeepTheirNodes() {
        let server = Array("db.example".utf8)
        var names = ListedNames(directory: Directory(itemClass: .internetPassword, service: server))
        let bare = ItemName(server: server, account: Array("u".utf8))
        let qualified = ItemName(server: server, account: Array("u".utf8), qualifiers: [.port: .number(5432)])
        XCTAssertTrue(names.append(listed(bare)))
        XCTAssertTrue(names.append(listed(qualified)))
        names.finish()
        XCTAssertEqual(names[0].node, .item(bare))
        XCTAssertEqual(names[1].node, .item(qualified))
        XCTAssertNotEqual(names[0].name, names[1].name)

        let dirs = ListedNames([Listed(name: Array(".internet".utf8), node: .classRoot(.internetPassword), dotIno: 0, file: nil),
                                Listed(name: svc, node: .service(.genericPassword, svc), dotIno: 0, file: nil)])
        XCTAssertEqual(dirs.count, 2)
        XCTAssertEqual(dirs[0].node, .classRoot(.internetPassword))
        XCTAssertNil(dirs[0].file)
        XCTAssertEqual(dirs[1].node, .service(.genericPassword, svc))
    }

    func testAHundredThousandNamesStayInOrderAndDistinct() {
        var names = ListedNames(directory: Directory(itemClass: .genericPassword, service: svc))
        for i in 0..<100_000 { XCTAssertTrue(names.append(listed(ItemName(service: svc, account: Array("user\(i)".utf8)), size: i))) }
        XCTAssertFalse(names.append(listed(ItemName(service: svc, account: Array("user4242".utf8)))))
        names.finish()
        XCTAssertEqual(names.count, 100_000)
        for i in stride(from: 0, to: 100_000, by: 997) {
            XCTAssertEqual(names[i].name, Array("user\(i)".utf8))
            XCTAssertEqual(names[i].file?.size, i)
            XCTAssertEqual(names.node(at: i), .item(ItemName(service: svc, account: Array("user\(i)".utf8))))
        }
    }
}
