import Foundation
import KeychainTestSupport
import XCTest

/// `--secret-file PATH` and `-w @PATH` store a file's exact bytes: a PEM keeps its final
/// newline, which `-w -` (documented to drop one) would take off.
final class CLISecretFileTests: HarnessTestCase {
    func write(_ name: String, _ bytes: [UInt8]) -> String {
        let path = h.dir + "/" + name
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]))
        return path
    }

    /// The secret as `find -w` prints it, without the one newline it adds.
    func stored(_ service: String, _ account: String, file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        let r = try h.run(["find-generic-password", "-s", service, "-a", account, "-w"], file: file, line: line)
        XCTAssertEqual(r.status, 0, "\(r)", file: file, line: line)
        XCTAssertEqual(r.stdout.last, "\n", file: file, line: line)
        return Array(r.stdout.utf8.dropLast())
    }

    func testTheFilesExactBytesAreStored() throws {
        let pem = Array("-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n".utf8)
        let pemPath = write("server.pem", pem)
        let odd: [UInt8] = [0x00, 0x0a, 0x0d, 0x0a, 0xff, 0x41, 0x0a, 0x0a]  // NUL, CRLF, two newlines at the end
        let oddPath = write("odd.bin", odd)
        for (account, args) in [("file", ["--secret-file", pemPath]), ("at", ["-w", "@" + pemPath])] {
            let r = try h.run(["add-generic-password", "-s", "tls", "-a", account] + args)
            XCTAssertEqual(r.status, 0, "\(args): \(r)")
            XCTAssertEqual(r.stdout + r.stderr, "", "no warning: the secret is not on the command line")
            XCTAssertEqual(try stored("tls", account), pem, "\(args): the final newline is kept")
        }
        // Odd bytes read back through -w print as they are (find -w writes the bytes).
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "bin", "-a", "odd", "--secret-file", oddPath]).status, 0)
        let json = try h.run(["find-generic-password", "-s", "bin", "-a", "odd", "-w", "--json"])
        XCTAssertEqual((h.jsonObject(json.stdout)["password"] as? [String: Any])?["hex"] as? String, "000a0d0aff410a0a")
        // -w - keeps its documented behaviour: one trailing newline dropped.
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "tls", "-a", "stdin", "-w", "-"], inputData: Data(pem)).status, 0)
        XCTAssertEqual(try stored("tls", "stdin"), Array(pem.dropLast()))
        // -U replaces from a file, and a file of exactly one byte (a newline) stays one byte.
        let newline = write("newline", [0x0a])
        XCTAssertEqual(try h.run(["add-generic-password", "-s", "tls", "-a", "file", "-U", "--secret-file", newline]).status, 0)
        XCTAssertEqual(try stored("tls", "file"), [0x0a])
        // An internet password takes it too; a pipe is read to its end.
        let fifo = h.dir + "/pipe"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let writer = Thread { if let f = FileHandle(forWritingAtPath: fifo) { f.write(Data(pem)); try? f.close() } }
        writer.start()
        XCTAssertEqual(try h.run(["add-internet-password", "-s", "db.example", "-a", "app", "--secret-file", fifo]).status, 0)
        let inet = try h.run(["find-internet-password", "-s", "db.example", "-w"])
        XCTAssertEqual(Array(inet.stdout.utf8), pem + [0x0a])
    }

    func testAFileThatCannotBeReadNamesItsPathAndStoresNothing() throws {
        let missing = h.dir + "/no-such.pem"
        let r = try h.run(["add-generic-password", "-s", "tls", "-a", "x", "--secret-file", missing])
        XCTAssertEqual(r.status, 220, "\(r)")
        XCTAssertEqual(r.stderr, "keychainfs: cannot read the secret file \(missing): No such file or directory\n")
        let dir = try h.run(["add-generic-password", "-s", "tls", "-a", "x", "-w", "@" + h.dir, "--json"])
        XCTAssertEqual(dir.status, 220, "\(dir)")
        XCTAssertEqual(h.jsonObject(dir.stdout)["error"] as? String, "errSecIO")
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "tls"]).status, 44, "nothing stored")
        // The secret comes from one place.
        let pem = write("a.pem", Array("a\n".utf8))
        let twice = try h.run(["add-generic-password", "-s", "tls", "-a", "x", "--secret-file", pem, "-w", "-"], input: "b")
        XCTAssertEqual(twice.status, 2, "\(twice)")
        XCTAssertTrue(twice.stderr.hasPrefix("keychainfs: give the secret once: -w, --secret-file or -X\n"), twice.stderr)
        // A file larger than an item holds (16 MiB) is refused before anything is sent.
        let big = h.dir + "/big"
        XCTAssertTrue(FileManager.default.createFile(atPath: big, contents: nil))
        XCTAssertEqual(truncate(big, off_t((16 << 20) + 1)), 0)
        let tooBig = try h.run(["add-generic-password", "-s", "tls", "-a", "x", "--secret-file", big])
        XCTAssertEqual(tooBig.status, 206, "\(tooBig)")
        XCTAssertTrue(tooBig.stderr.hasSuffix("keychainfs: the secret file \(big) is larger than 16 MiB, the most an item holds\n"), tooBig.stderr)
    }
}
