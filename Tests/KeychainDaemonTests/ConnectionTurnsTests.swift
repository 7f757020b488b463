import Dispatch
import Foundation
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// Another uid's requests take turns on the event threads (one at a time per uid): every one
/// of them is still answered, in order per connection, and the owner is answered meanwhile.
final class ConnectionTurnsTests: XCTestCase {
    func testAnotherUIDsBusyConnectionsAreAllAnsweredAndTheOwnerMeanwhile() throws {
        let d = try InProcessDaemon()
        defer { d.stop() }
        try d.addPassword(service: "db", account: "app", secret: "s3cret")
        let fds = try (0..<8).map { _ in try d.connect(as: InProcessDaemon.outsider) }
        defer { for fd in fds { close(fd) } }
        // Each connection sends three requests at once (sent ahead), then reads three answers.
        let rounds = 100
        final class Tally: @unchecked Sendable {
            let lock = NSLock()
            var answered = 0
            var wrong = 0
        }
        let tally = Tally()
        let group = DispatchGroup()
        for fd in fds {
            DispatchQueue.global().async(group: group) {
                let lookup = Request(.copyMatching, query: ["class": "genp", "svce": "db", "acct": "app", "r_Data": true])
                var ok = 0, bad = 0
                for _ in 0..<rounds {
                    do {
                        try Frame.write(lookup.encoded(), to: fd)
                        try Frame.write(Request(.ping).encoded(), to: fd)
                        try Frame.write(lookup.encoded(), to: fd)
                        for expected in [KeychainStatus.itemNotFound, .success, .itemNotFound] {
                            guard let frame = try Frame.read(from: fd) else { bad += 1; break }
                            if try Response.decode(frame).status == expected { ok += 1 } else { bad += 1 }
                        }
                    } catch {
                        bad += 1
                        break
                    }
                }
                tally.lock.lock()
                tally.answered += ok
                tally.wrong += bad
                tally.lock.unlock()
            }
        }
        for _ in 0..<20 {
            let start = Date()
            XCTAssertEqual(secretText(try d.readPassword(service: "db", account: "app")), "s3cret")
            XCTAssertLessThan(Date().timeIntervalSince(start), 1.0, "the owner is answered during the other uid's load")
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success, "every connection got its answers")
        XCTAssertEqual(tally.wrong, 0)
        XCTAssertEqual(tally.answered, fds.count * rounds * 3, "no request of the other uid was lost")
    }
}
