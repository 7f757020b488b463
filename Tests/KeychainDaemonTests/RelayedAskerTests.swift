import Glibc
@testable import KeychainDaemon
import KeychainfsAccess
import KeychainModel
import XCTest

/// Who the unlock program is told asks: a caller named in an unlock request (`for-uid`,
/// `for-pid`) is taken only from a relay running the daemon's own executable (the Secret
/// Service provider); from any other socket caller the request is refused.
final class RelayedAskerTests: XCTestCase {
    let own = CallerIdentity.executablePath(pid: getpid())

    func relay(_ exe: String?) -> CallerIdentity {
        CallerIdentity(pid: 4242, uid: 1000, gid: 1000, groups: [1000], executable: exe)
    }

    func testNoClaimIsTheSocketCallerAlone() throws {
        XCTAssertNil(try ApprovalAgent.relayedAsker(["by": .string("approval-program")], relay: relay("/usr/bin/python3")))
    }

    func testTheDaemonsOwnExecutableMayNameItsCaller() throws {
        let asker = try XCTUnwrap(ApprovalAgent.relayedAsker(["for-uid": .number(1234), "for-pid": .number(77)], relay: relay(own)))
        XCTAssertEqual(asker.uid, 1234)
        XCTAssertEqual(asker.pid, 77)
        XCTAssertNil(asker.executable)
        XCTAssertEqual(asker.groups, [])
    }

    func testAnyOtherCallerOrAMalformedClaimIsRefused() {
        let claim: Fields = ["for-uid": .number(0), "for-pid": .number(1)]
        for exe in ["/usr/bin/python3", nil] as [String?] {
            XCTAssertThrowsError(try ApprovalAgent.relayedAsker(claim, relay: relay(exe))) {
                XCTAssertEqual($0 as? KeychainStatus, .param)
            }
        }
        for bad: Fields in [["for-uid": .number(0)], ["for-uid": .number(-1), "for-pid": .number(1)],
                            ["for-uid": .string("0"), "for-pid": .number(1)]] {
            XCTAssertThrowsError(try ApprovalAgent.relayedAsker(bad, relay: relay(own)))
        }
    }
}
