import Foundation
import Glibc
@testable import KeychainClient
import KeychainCrypto
import XCTest

/// The Assuan client against scripted fake pinentries: small shell scripts that speak (or
/// break) the protocol, each logging the commands it got. What a caller sees: the passphrase's
/// exact bytes, or which failure.
final class PinentryTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        var template = Array("/tmp/keychainfs-test-pinentry-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw XCTSkip("mkdtemp: errno \(errno)") }
        dir = String(cString: made)
    }

    override func tearDown() {
        if !dir.isEmpty { try? FileManager.default.removeItem(atPath: dir) }
        super.tearDown()
    }

    /// A fake pinentry: greets, logs each command to `log`, answers GETPIN with `getpin` (shell
    /// lines), BYE with OK and an exit, OPTION with `option`, anything else with OK.
    func fake(getpin: String, option: String = "echo OK", greeting: String = "echo 'OK Pleased to meet you'") throws -> Pinentry {
        let path = dir + "/pinentry-fake"
        let script = """
        #!/bin/sh
        \(greeting)
        while IFS= read -r line; do
          printf '%s\\n' "$line" >> '\(dir)/log'
          case "$line" in
            GETPIN) \(getpin) ;;
            BYE) echo OK; exit 0 ;;
            OPTION*) \(option) ;;
            *) echo OK ;;
          esac
        done
        """
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        var p = try Pinentry(program: path)
        p.terminal = "/dev/pts/99"
        p.timeout = 10
        return p
    }

    var log: [String] { ((try? String(contentsOfFile: dir + "/log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }

    func ask(_ p: Pinentry, description: String = "Unlock the vault") throws -> [UInt8] {
        let pin = try p.askPassphrase(title: "keychainfs", description: description, prompt: "Passphrase:")
        return pin.withUnsafeBytes { Array($0) }
    }

    func failure(_ body: () throws -> Any) -> Pinentry.Failure? {
        do { _ = try body(); return nil } catch let f as Pinentry.Failure { return f } catch { XCTFail("\(error)"); return nil }
    }

    func testPassphraseAndCommandsSent() throws {
        let p = try fake(getpin: "echo 'D correct horse'; echo OK")
        XCTAssertEqual(try ask(p, description: "Vault /v\n100% yours"), Array("correct horse".utf8))
        XCTAssertEqual(log.first, "OPTION ttyname=/dev/pts/99")
        XCTAssertTrue(log.contains("SETTITLE keychainfs"), "\(log)")
        XCTAssertTrue(log.contains("SETDESC Vault /v%0A100%25 yours"), "the description is %-escaped: \(log)")
        XCTAssertTrue(log.contains("SETPROMPT Passphrase:"), "\(log)")
        XCTAssertEqual(log.suffix(2), ["GETPIN", "BYE"])
    }

    func testPercentEscapesAreDecodedIntoTheExactBytes() throws {
        let p = try fake(getpin: "echo 'D a%25b%0Ac%0dd%2B%c3%A9 e'; echo OK")
        XCTAssertEqual(try ask(p), [0x61, 0x25, 0x62, 0x0a, 0x63, 0x0d, 0x64, 0x2b, 0xc3, 0xa9, 0x20, 0x65])
    }

    func testDataLinesStatusAndCommentsTogether() throws {
        let p = try fake(getpin: "echo 'S PASSWORD_FROM_CACHE'; echo 'D first-'; echo '# a comment'; echo 'D second'; echo OK")
        XCTAssertEqual(try ask(p), Array("first-second".utf8))
    }

    func testEmptyPassphrase() throws {
        let p = try fake(getpin: "echo OK")
        XCTAssertEqual(try ask(p), [])
    }

    func testCancelled() throws {
        let p = try fake(getpin: "echo 'ERR 83886179 Operation cancelled <Pinentry>'")
        XCTAssertEqual(failure { try self.ask(p) }, .cancelled)
    }

    func testOtherErrorIsRefusedWithItsCodeAndText() throws {
        let p = try fake(getpin: "echo 'ERR 83886254 No pinentry <Pinentry>'")
        XCTAssertEqual(failure { try self.ask(p) }, .refused(code: 83886254, text: "No pinentry <Pinentry>"))
    }

    func testUnknownOptionsAreLetGo() throws {
        let p = try fake(getpin: "echo 'D ok'; echo OK", option: "echo 'ERR 83886254 Unknown option'")
        XCTAssertEqual(try ask(p), Array("ok".utf8))
    }

    func testMissingProgram() {
        XCTAssertEqual(failure { try Pinentry(program: self.dir + "/no-such-pinentry") }, .notFound(dir + "/no-such-pinentry"))
        XCTAssertEqual(failure { try Pinentry(program: "keychainfs-no-such-pinentry") }, .notFound("keychainfs-no-such-pinentry"))
        XCTAssertNotNil(Pinentry.locate("sh"), "a name is looked up on PATH")
    }

    func testNoGreeting() throws {
        let p = try fake(getpin: "echo OK", greeting: "echo 'hello there'")
        guard case .brokeProtocol(let what)? = failure({ try self.ask(p) }) else { return XCTFail("not a protocol error") }
        XCTAssertTrue(what.contains("\"hello\""), what)
    }

    func testEndsBeforeAnswering() throws {
        let p = try fake(getpin: "exit 0")
        guard case .brokeProtocol(let what)? = failure({ try self.ask(p) }) else { return XCTFail("not a protocol error") }
        XCTAssertTrue(what.contains("ended"), what)
    }

    func testGarbageInAnswerNeverShowsMoreThanItsFirstWord() throws {
        let p = try fake(getpin: "echo 'hunter2 is the passphrase'; echo OK")
        let f = failure { try self.ask(p) }
        guard case .brokeProtocol? = f else { return XCTFail("not a protocol error: \(String(describing: f))") }
        XCTAssertFalse(f!.description.contains("passphrase\""), f!.description)
        XCTAssertFalse(f!.description.contains("is the"), f!.description)
    }

    func testBadEscape() throws {
        let p = try fake(getpin: "echo 'D ab%4'; echo OK")
        guard case .brokeProtocol? = failure({ try self.ask(p) }) else { return XCTFail("not a protocol error") }
    }

    func testTooLongPassphrase() throws {
        // 5 D lines of 900 bytes: past the 4096-byte limit.
        let p = try fake(getpin: "i=0; while [ $i -lt 5 ]; do printf 'D %0900d\\n' 0; i=$((i+1)); done; echo OK")
        guard case .brokeProtocol? = failure({ try self.ask(p) }) else { return XCTFail("not a protocol error") }
    }

    func testNoAnswerInTimeKillsIt() throws {
        var p = try fake(getpin: "exec sleep 30")
        p.timeout = 1
        let start = Date()
        XCTAssertEqual(failure { try self.ask(p) }, .timedOut)
        XCTAssertLessThan(Date().timeIntervalSince(start), 10)
    }

    func testEscapeOfCommandText() {
        XCTAssertEqual(Pinentry.escape("a%b\nc\rd\u{1}é"), "a%25b%0Ac%0Dd%01é")
    }
}
