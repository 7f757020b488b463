import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// A caller's groups as its requests see them: a connection's requests share one context, and
/// a change to the group table reaches the next request on a connection already open.
final class RequestContextTests: XCTestCase {
    private var d: InProcessDaemon!

    override func setUpWithError() throws { d = try InProcessDaemon() }
    override func tearDown() { d?.stop() }

    private let query: Attributes = [.class: "genp", .service: "db", .account: "app", .accessGroup: "team", .returnData: true]

    private func read(on fd: Int32) throws -> (KeychainStatus, String?) {
        let r = try d.call(ItemSearch(query: query).request, on: fd)
        return (r.status, secretText(r))
    }

    func testAGroupChangeReachesTheNextRequestOfAnOpenConnection() throws {
        let outsider = InProcessDaemon.outsider
        let fd = try d.connect(as: outsider)
        defer { close(fd) }
        XCTAssertNotEqual(try read(on: fd).0, .success, "no group entitles the outsider yet")

        _ = try d.reply(GroupRequest.add(GroupChange(name: "team", gid: outsider.gid, mode: 0o440)), StatusReply.self)
        _ = try d.reply(ItemAdd(attributes: [.class: "genp", .service: "db", .account: "app", .accessGroup: "team"],
                                secret: try SecureBytes(copying: Array("s3cret".utf8))), ItemsReply.self)
        let (status, secret) = try read(on: fd)
        XCTAssertEqual(status, .success, "the group added after the connection's first request entitles it")
        XCTAssertEqual(secret, "s3cret")
        XCTAssertEqual(try read(on: fd).1, "s3cret", "and again, from the kept context")

        _ = try d.reply(GroupRequest.set(GroupChange(name: "team", mode: 0o400)), StatusReply.self)
        XCTAssertNotEqual(try read(on: fd).0, .success, "a group no longer readable by the outsider's gid entitles it no more")
        let owner = try d.connect(as: InProcessDaemon.owner)
        defer { close(owner) }
        XCTAssertEqual(try read(on: owner).1, "s3cret", "the owner still reads it")
    }
}
