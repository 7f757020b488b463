import Glibc
import KeychainSystem
import XCTest

final class TerminalTests: XCTestCase {
    func testAPseudoTerminalIsATerminalAndAPipeIsNot() throws {
        let (controller, terminal) = try FileDescriptor.openPseudoTerminal()
        defer { try? controller.close(); try? terminal.close() }
        XCTAssertTrue(terminal.isTerminal)
        let (a, b) = try FileDescriptor.unixStreamPair()
        defer { try? a.close(); try? b.close() }
        XCTAssertFalse(a.isTerminal)
    }

    /// What is typed while echo is off reaches the reader but is not written back to the
    /// screen; after, typing echoes again.
    func testEchoIsOffInsideAndBackAfter() throws {
        let (controller, terminal) = try FileDescriptor.openPseudoTerminal()
        defer { try? controller.close(); try? terminal.close() }
        XCTAssertTrue(echoes(terminal))
        let secret = try terminal.withEchoOff { () throws(Errno) -> String in
            XCTAssertFalse(echoes(terminal))
            try type("hunter2\n", into: controller)
            return try readLine(terminal)
        }
        XCTAssertEqual(secret, "hunter2\n")
        XCTAssertTrue(echoes(terminal))
        try type("shown\n", into: controller)
        XCTAssertEqual(try readLine(terminal), "shown\n")
        // The terminal has echoed the input it processed before the reader got it.
        var screen = [UInt8](repeating: 0, count: 256)
        let n = try screen.withUnsafeMutableBytes { try controller.read(into: $0) }
        XCTAssertEqual(String(decoding: screen[0..<n], as: UTF8.self), "shown\r\n")
    }

    func testEchoComesBackWhenTheBodyThrows() throws {
        let (controller, terminal) = try FileDescriptor.openPseudoTerminal()
        defer { try? controller.close(); try? terminal.close() }
        XCTAssertEqual(thrownErrno { try terminal.withEchoOff { () throws(Errno) in throw Errno.ioError } }, .ioError)
        XCTAssertTrue(echoes(terminal))
    }

    func testEchoOffOnSomethingElseJustRunsTheBody() throws {
        let fd = try FileDescriptor.open("/dev/null", .readOnly)
        defer { try? fd.close() }
        XCTAssertEqual(fd.withEchoOff { 42 }, 42)
    }

    private func echoes(_ fd: FileDescriptor) -> Bool {
        var settings = termios()
        XCTAssertEqual(tcgetattr(fd.rawValue, &settings), 0)
        return settings.c_lflag & tcflag_t(ECHO) != 0
    }

    private func type(_ text: String, into controller: FileDescriptor) throws(Errno) {
        let bytes = Array(text.utf8)
        try bytes.withUnsafeBytes { b in Result { () throws(Errno) in try controller.writeAll(b) } }.get()
    }

    /// One canonical-mode read: a whole line.
    private func readLine(_ terminal: FileDescriptor) throws(Errno) -> String {
        var line = [UInt8](repeating: 0, count: 256)
        let n = try line.withUnsafeMutableBytes { b in Result { () throws(Errno) in try terminal.read(into: b) } }.get()
        return String(decoding: line[0..<n], as: UTF8.self)
    }
}
