import Foundation
import Glibc
import KeychainfsAccess
import KeychainCore
import XCTest
@testable import KeychainDaemon

/// An access control with applicationPassword asks for a password that only an `LAContext`
/// carries (Apple requires it beside the other constraints, `.or` included). The approval
/// program cannot give it: the daemon's one approval step, which the mount's gated opens and
/// SecItem searches share, refuses without running the program.
final class ApplicationPasswordApprovalTests: XCTestCase {
    var d: InProcessDaemon!
    var marker: String { d.dir + "/asked" }

    override func setUpWithError() throws {
        d = try InProcessDaemon()
        let program = d.dir + "/approve.sh"
        try "#!/bin/sh\necho \"$@\" >> '\(marker)'\nexit 0\n".write(toFile: program, atomically: true, encoding: .utf8)
        chmod(program, 0o755)
        try d.daemon.vault.setSetting("approval-program", Array(program.utf8))
    }

    override func tearDown() { d?.stop() }

    func approve(_ flags: UInt64) -> KeychainStatus {
        let ref = PersistentRef(itemClass: .genericPassword, uuid: Array(repeating: 7, count: 16))
        let attributes: Attributes = [.service: "svc", .accessControl: AccessControl(protection: .afterFirstUnlock, flags: flags).value]
        return d.daemon.approvePresence(ref: ref, attributes: attributes, caller: InProcessDaemon.owner)
    }

    var asked: Int {
        ((try? String(contentsOfFile: marker, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    func testApplicationPasswordIsRefusedWithoutAskingTheProgram() {
        XCTAssertEqual(approve(AccessControl.applicationPassword), .interactionNotAllowed)
        XCTAssertEqual(approve(AccessControl.userPresence | AccessControl.or | AccessControl.applicationPassword),
                       .interactionNotAllowed)
        XCTAssertEqual(asked, 0, "the program was not run")
        // The same step with presence alone runs the program, which approves.
        XCTAssertEqual(approve(AccessControl.userPresence), .success)
        XCTAssertEqual(asked, 1)
    }
}
