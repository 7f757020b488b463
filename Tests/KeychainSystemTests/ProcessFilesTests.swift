import Glibc
import KeychainSystem
import XCTest

/// What /proc says of a process, read for this very process and for a pid that never exists.
final class ProcessFilesTests: XCTestCase {
    func testThisProcessIsReadFromProc() throws {
        var groups = [gid_t](repeating: 0, count: 256)
        let n = getgroups(Int32(groups.count), &groups)
        XCTAssertEqual(ProcessFiles.supplementaryGroups(of: getpid()), Set(groups.prefix(Int(n))), "Groups: of /proc/PID/status")
        XCTAssertEqual(ProcessFiles.executable(of: getpid()), try CurrentProcess.executablePath())
    }

    func testAProcessThatIsGoneHasNoGroupsAndNoExecutable() {
        // pid_max is at most 2^22: this pid never exists.
        XCTAssertEqual(ProcessFiles.supplementaryGroups(of: 1 << 23), [])
        XCTAssertNil(ProcessFiles.executable(of: 1 << 23))
    }
}
