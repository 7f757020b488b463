import KeychainCrypto
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// The daemon's table of operations: one row for each, every wire code reaches one, and the
/// rights and lanes the rows give are those the threat model names.
final class OperationTableTests: XCTestCase {
    func testEveryOperationHasExactlyOneRow() {
        var seen: [DaemonOperation: Int] = [:]
        for row in OperationTable.rows { seen[row.operation, default: 0] += 1 }
        for operation in DaemonOperation.allCases {
            XCTAssertEqual(seen[operation], 1, "\(operation) must have one row")
        }
        XCTAssertEqual(OperationTable.rows.count, DaemonOperation.allCases.count)
    }

    func testEveryWireCodeReachesARowOfItsOwnCode() {
        for code in KeychainProtocol.Operation.allCases {
            let row = OperationTable.row(for: Request(code))
            XCTAssertNotNil(row, "\(code) has no row")
            if let row { XCTAssertEqual(DaemonOperation(of: Request(code)), row.operation) }
        }
    }

    func testTheAuditLogsCheckAndRotationAreRowsOfTheirOwn() throws {
        XCTAssertEqual(OperationTable.row(for: Request(.audit))?.operation, .auditRead)
        XCTAssertEqual(OperationTable.row(for: AuditRequest.verify.request)?.operation, .auditVerify)
        XCTAssertEqual(OperationTable.row(for: AuditRequest.rotate.request)?.operation, .auditRotate)
        XCTAssertNil(OperationTable.row(for: Request(.audit, options: [.verify: .string("yes")])), "a flag of another type")
        XCTAssertEqual(OperationTable.row(for: Request(.audit))?.right, .auditor)
        XCTAssertEqual(OperationTable.row(for: AuditRequest.verify.request)?.right, .administrator)
        XCTAssertEqual(OperationTable.row(for: AuditRequest.rotate.request)?.right, .administrator)
    }

    func testRightsOfTheRows() {
        let anyone: Set<DaemonOperation> = [.ping, .info, .groupList, .add, .copyMatching, .lookup, .update, .delete, .useKey, .unlock]
        for row in OperationTable.rows {
            switch row.operation {
            case _ where anyone.contains(row.operation): XCTAssertEqual(row.right, .anyone, "\(row.operation)")
            case .watch, .checkSignature: XCTAssertEqual(row.right, .entitled, "\(row.operation)")
            case .lock: XCTAssertEqual(row.right, .locker)
            case .auditRead: XCTAssertEqual(row.right, .auditor)
            default: XCTAssertEqual(row.right, .administrator, "\(row.operation)")
            }
        }
    }

    /// The lane is the row's, from the request alone: an add that makes a key and the
    /// operations that wait run on a slow worker; lookups never do.
    func testLanesAreDecidedFromTheRequest() throws {
        func slow(_ r: Request) -> Bool { OperationTable.row(for: r)!.runsOnSlowWorker(r) }
        XCTAssertFalse(slow(ItemSearch(query: [.service: "s"]).request))
        XCTAssertFalse(slow(ItemAdd(attributes: [.service: "s"], secret: try SecureBytes(copying: [1])).request))
        XCTAssertTrue(slow(ItemAdd(attributes: [.class: "keys"], generate: ItemAdd.privateKey).request))
        XCTAssertTrue(slow(ItemAdd(attributes: [.class: "keys", .tokenID: "com.apple.setoken"]).request))
        for code: KeychainProtocol.Operation in [.unlock, .lock, .mount, .unmount, .verify, .export, .import, .sync, .changePassphrase] {
            XCTAssertTrue(slow(Request(code)), "\(code)")
        }
        for code: KeychainProtocol.Operation in [.ping, .info, .copyMatching, .lookup, .update, .delete, .useKey, .groupList, .audit, .watch] {
            XCTAssertFalse(slow(Request(code)), "\(code)")
        }
    }

    func testTheSecretsEachRowTakes() {
        func secrets(_ code: KeychainProtocol.Operation) -> ClosedRange<Int>? { OperationTable.row(for: Request(code))?.secrets }
        XCTAssertEqual(secrets(.changePassphrase), 2...2)
        XCTAssertEqual(secrets(.useKey), 1...1)
        XCTAssertEqual(secrets(.add), 0...1)
        XCTAssertEqual(secrets(.copyMatching), 0...0)
        XCTAssertEqual(secrets(.lookup), 0...0)
        XCTAssertEqual(secrets(.unlock), 0...1)
    }
}
