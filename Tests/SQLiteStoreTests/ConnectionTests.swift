import SQLiteStore
import XCTest

final class ConnectionTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "sqlite-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func testRoundTripsValuesAndRollsBack() throws {
        let db = try Connection(path: dir + "/t.db", create: true)
        try db.execute("CREATE TABLE t(a INTEGER, b BLOB, c TEXT)")
        try db.prepare("INSERT INTO t VALUES(?, ?, ?)").bind(.integer(-5), .blob([]), .text("x")).run()
        XCTAssertThrowsError(try db.transaction {
            try db.prepare("INSERT INTO t VALUES(?, ?, ?)").bind(.integer(1), .blob([1]), .null).run()
            throw CancellationError()
        })
        let st = try db.prepare("SELECT a, b, c FROM t")
        XCTAssertTrue(try st.step())
        XCTAssertEqual(st.int(0), -5)
        XCTAssertEqual(st.blob(1), [])  // an empty blob is not NULL
        XCTAssertEqual(st.text(2), "x")
        XCTAssertFalse(try st.step())
    }

    func testMissingFileWithoutCreateFails() {
        XCTAssertThrowsError(try Connection(path: dir + "/missing.db", create: false)) {
            XCTAssertEqual(($0 as? SQLiteError)?.primaryCode, 14)  // SQLITE_CANTOPEN
        }
    }

    func testNotADatabase() throws {
        try Data("this is not sqlite, just text that is long enough to fill a header....................................".utf8)
            .write(to: URL(fileURLWithPath: dir + "/text.db"))
        let db = try Connection(path: dir + "/text.db", create: false)
        XCTAssertThrowsError(try db.execute("SELECT * FROM sqlite_master")) {
            XCTAssertTrue(($0 as? SQLiteError)?.isNotADatabase == true)
        }
    }
}
