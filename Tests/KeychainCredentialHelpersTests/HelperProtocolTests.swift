import Foundation
import KeychainCrypto
@testable import KeychainCredentialHelpers
import KeychainModel
import XCTest

func secure(_ s: String) throws -> SecureBytes { try SecureBytes(copying: Array(s.utf8)) }
func text(_ s: SecureBytes?) -> String? { s.map { $0.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } } }

/// git's credential helper protocol (gitcredentials(7)) as git sends it.
final class GitCredentialTests: XCTestCase {
    func testTheFieldsGitSends() throws {
        let c = try GitCredential(parsing: try secure("protocol=https\nhost=git.example.com:8443\npath=org/repo.git\nusername=bob\npassword=p=ss word\nwwwauth[]=Basic\n\n"))
        XCTAssertEqual(c.protocolCode, "htps")
        XCTAssertEqual(c.host, "git.example.com")
        XCTAssertEqual(c.port, 8443)
        XCTAssertEqual(c.path, "org/repo.git")
        XCTAssertEqual(c.username, "bob")
        XCTAssertEqual(text(c.password), "p=ss word", "the first '=' splits; the rest is the value")
        XCTAssertFalse(c.unsupportedProtocol)
        XCTAssertEqual(c.query, [.authenticationType: "dflt", .server: "git.example.com", .protocol: "htps", .port: .number(8443),
                                 .path: "org/repo.git", .account: "bob"])
    }

    func testProtocolsAreApplesCodes() throws {
        let codes = ["https": "htps", "http": "http", "ftp": "ftp ", "ftps": "ftps", "imap": "imap", "imaps": "imps", "smtp": "smtp"]
        for (name, code) in codes {
            let c = try GitCredential(parsing: try secure("protocol=\(name)\nhost=h\n"))
            XCTAssertEqual(c.protocolCode, code, name)
            XCTAssertFalse(c.unsupportedProtocol)
        }
        let ssh = try GitCredential(parsing: try secure("protocol=ssh\nhost=h\n"))
        XCTAssertNil(ssh.protocolCode)
        XCTAssertTrue(ssh.unsupportedProtocol, "git-credential-osxkeychain does nothing for it")
        XCTAssertEqual(ssh.query, [.authenticationType: "dflt", .server: "h"])
    }

    func testAHostsPortOnlyWhenItIsOne() throws {
        let cases: [(String, String, Int64?)] = [("h:443", "h", 443), ("h", "h", nil), ("h:x", "h:x", nil), ("h:70000", "h:70000", nil),
                                                 ("[::1]:8080", "[::1]", 8080), ("h:", "h:", nil)]
        for (given, host, port) in cases {
            let c = try GitCredential(parsing: try secure("host=\(given)"))
            XCTAssertEqual(c.host, host, given)
            XCTAssertEqual(c.port, port, given)
        }
    }

    func testInputEndsAtABlankLineAndALineWithoutEqualsIsRefused() throws {
        let c = try GitCredential(parsing: try secure("host=a\n\nhost=b\nnonsense\n"))
        XCTAssertEqual(c.host, "a", "what follows the blank line is not read")
        XCTAssertThrowsError(try GitCredential(parsing: try secure("host=a\npassword-without-equals\n"))) { error in
            XCTAssertEqual((error as? GitCredential.BadInput)?.line, "a line without '='", "the line itself is never repeated")
        }
        XCTAssertNil(try GitCredential(parsing: try secure("")).host)
    }

    func testAnItemIsTheCredentialsOwnOnlyWithItsPortAndPath() throws {
        let c = try GitCredential(parsing: try secure("protocol=https\nhost=h\nusername=u\n"))
        XCTAssertTrue(c.isStored(in: FoundItem(attributes: [.server: "h"], secret: nil, persistentRef: nil)))
        XCTAssertTrue(c.isStored(in: FoundItem(attributes: [.server: "h", .port: .number(0), .path: ""], secret: nil, persistentRef: nil)))
        XCTAssertFalse(c.isStored(in: FoundItem(attributes: [.server: "h", .port: .number(8443)], secret: nil, persistentRef: nil)))
        XCTAssertFalse(c.isStored(in: FoundItem(attributes: [.server: "h", .path: "repo"], secret: nil, persistentRef: nil)))
    }
}

/// docker's server URLs, split as docker-credential-osxkeychain splits them.
final class RegistryURLTests: XCTestCase {
    func testURLsSplitIntoTheItemsAttributes() throws {
        let cases: [(String, Bool, String, Int64?, String)] = [
            ("https://index.docker.io/v1/", true, "index.docker.io", nil, "/v1/"),
            ("registry.example.com", true, "registry.example.com", nil, ""),
            ("//registry.example.com:5000", true, "registry.example.com", 5000, ""),
            ("http://localhost:5000/v2?x=1#f", false, "localhost", 5000, "/v2"),
            ("HTTPS://user:pw@r.example.com/p", true, "r.example.com", nil, "/p"),
            ("https://[2001:db8::1]:443/", true, "2001:db8::1", 443, "/"),
            ("https://[::1]/", true, "::1", nil, "/"),
            ("https://r.example.com:0", true, "r.example.com", nil, ""),
            ("https://r.example.com:", true, "r.example.com", nil, ""),
        ]
        for (text, secure, host, port, path) in cases {
            let u = try RegistryURL(text)
            XCTAssertEqual(u.secure, secure, text)
            XCTAssertEqual(u.host, host, text)
            XCTAssertEqual(u.port, port, text)
            XCTAssertEqual(u.path, path, text)
        }
        XCTAssertEqual(try RegistryURL("http://h:81/p").query, [.server: "h", .protocol: "http", .port: .number(81), .path: "/p"])
        XCTAssertEqual(try RegistryURL("h").query, [.server: "h", .protocol: "htps"])
    }

    func testInvalidURLsSayWhy() {
        let cases = [("ftp://h", "unsupported scheme: ftp"), ("https://", "no hostname in URL"), ("https:///p", "no hostname in URL"),
                     ("https://h:99999", "invalid port in URL"), ("https://h:x", "invalid port in URL"), ("", "no hostname in URL")]
        for (text, message) in cases {
            XCTAssertThrowsError(try RegistryURL(text), text) { XCTAssertEqual(($0 as? RegistryURL.Invalid)?.message, message, text) }
        }
    }

    func testAnItemNamesItsURLBack() throws {
        for text in ["https://r.example.com", "http://h:81/v2/", "https://[2001:db8::1]:5000/x"] {
            let u = try RegistryURL(text)
            XCTAssertEqual(RegistryURL.url(of: u.query), text)
            XCTAssertEqual(try RegistryURL(RegistryURL.url(of: u.query) ?? ""), u)
        }
        XCTAssertNil(RegistryURL.url(of: [.protocol: "htps"]))
        XCTAssertNil(RegistryURL.url(of: [.server: ""]))
    }
}

/// docker's JSON: what the helper reads (one object of strings, `Secret` into guarded memory)
/// and writes (Go's encoding/json escaping), checked against Python's json module.
final class DockerJSONTests: XCTestCase {
    func parse(_ s: String) throws -> JSONCredentials { try JSONCredentials(parsing: try secure(s), secretKey: "secret") }

    func testTheObjectDockerSends() throws {
        let c = try parse(#" { "ServerURL" : "https://r.example.com", "Username":"bob", "Secret":"p\"a\\s\/s\u00e9\ud83d\ude00\n", "x": [1, {"y": null}], "n": -1.5e3 } "#)
        XCTAssertEqual(c.fields, ["serverurl": "https://r.example.com", "username": "bob"], "keys without regard to case; others skipped")
        XCTAssertEqual(text(c.secret), "p\"a\\s/sé😀\n")
        XCTAssertEqual(try parse("{}").fields, [:])
        XCTAssertEqual(try parse(#"{"a":true,"b":false,"c":0,"d":-0.5E+2,"e":[],"f":{},"g":null,"u":"x"}"#).fields, ["u": "x"],
                       "every JSON value is skipped under a key docker's struct does not have")
        XCTAssertNil(try parse("{}").secret)
        XCTAssertEqual(text(try parse(#"{"secret":"a","SECRET":"b"}"#).secret), "b", "the last one counts, as in Go")
        XCTAssertEqual(text(try parse(#"{"Secret":"\ud83dx"}"#).secret), "\u{FFFD}x", "a lone surrogate half")
    }

    func testMalformedJSONNamesAPositionNeverAValue() {
        let cases = [#"{"Secret":"hunter2"#, #"{"Secret":"hunter2"} x"#, #"["hunter2"]"#,
                     "{\"Secret\":\"hun\tter2\"}", #"{"Secret":"\qhunter2"}"#, #"{"Secret":"\u12"}"#, #"{"Secret" "hunter2"}"#,
                     String(repeating: #"{"a":["#, count: 40) + "1" + String(repeating: "]}", count: 40) + "}",
                     #"{"Secret":hunter2}"#, #"{"x":hunter2,"Secret":"s"}"#, #"{"x":truex}"#, #"{"x":01}"#,
                     #"{"x":1.}"#, #"{"x":-}"#, #"{"x":1e}"#, #"{"x":+1}"#]
        for json in cases {
            XCTAssertThrowsError(try parse(json), json) { error in
                let message = (error as? JSONCredentials.Malformed)?.message ?? ""
                XCTAssertTrue(message.hasPrefix("invalid JSON: ") && message.contains(" at byte "), message)
                XCTAssertFalse(message.contains("hunter2"), message)
            }
        }
    }

    func encode(_ s: String) -> String { DockerCredentialHelper.jsonText(s) }

    func testStringsAreWrittenAsGoWritesThem() {
        XCTAssertEqual(encode("plain"), #""plain""#)
        XCTAssertEqual(encode("a\"b\\c\nd\re\tf"), #""a\"b\\c\nd\re\tf""#)
        XCTAssertEqual(encode("<&>\u{1}\u{1f}"), #""\u003c\u0026\u003e\u0001\u001f""#)
        XCTAssertEqual(encode("é/😀"), "\"é/😀\"", "non-ASCII and '/' as they are")
    }

    func testPythonReadsWhatIsWrittenAndWhatPythonWritesIsRead() throws {
        let python = "/usr/bin/python3"
        guard access(python, X_OK) == 0 else { throw XCTSkip("\(python) is not installed") }
        let samples = ["plain", "quote\" back\\slash", "<script>&amp;", "tab\tnew\nline\r", "\u{0}\u{1}\u{7f}", "é日本😀", "/"]
        let ours = "[" + samples.map(encode).joined(separator: ",") + "]"
        // Python decodes our text and writes each sample back in its own escaping (ASCII only,
        // surrogate pairs), which our reader must decode to the same bytes.
        let script = "import json, sys\nfor s in json.loads(sys.stdin.read()): print(json.dumps({'Secret': s, 'ServerURL': s}))"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = ["-c", script]
        let input = Pipe(), output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        try p.run()
        input.fileHandleForWriting.write(Data(ours.utf8))
        try input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        let lines = String(decoding: out, as: UTF8.self).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, samples.count)
        for (line, sample) in zip(lines, samples) {
            XCTAssertTrue(line.allSatisfy(\.isASCII), line)
            let c = try parse(line)
            XCTAssertEqual(text(c.secret), sample, line)
            XCTAssertEqual(c.fields["serverurl"], sample, line)
        }
    }
}
