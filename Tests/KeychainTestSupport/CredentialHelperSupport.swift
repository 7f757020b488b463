import Foundation
import XCTest

/// The built credential helpers: beside `$KEYCHAINFS_BIN`, else in the build directory of the
/// test bundle, where `keychainfs-daemon` (which they start when no daemon runs) is too. Not the
/// harness's shared copy of `keychainfs`: the helpers run as the test's own user.
package enum CredentialHelpers {
    package static var git: String { built("git-credential-keychainfs") }
    package static var docker: String { built("docker-credential-keychainfs") }

    private static func built(_ name: String) -> String {
        if let b = ProcessInfo.processInfo.environment["KEYCHAINFS_BIN"] {
            return (b as NSString).deletingLastPathComponent + "/" + name
        }
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return FileManager.default.currentDirectoryPath + "/.build/debug/" + name
    }
}

/// A git server on loopback: `git http-backend` as a CGI program behind a small Python HTTP
/// server that demands one user and password (HTTP basic auth) for every request. It serves
/// the bare repositories under `root` on a port the kernel picks; `stop()` ends it (call it from
/// `tearDown`).
package final class GitHTTPServer {
    package let root: String
    package let port: Int
    private let process: Process

    /// - Parameter login: `user:password`, read by the server from a file in `root`.
    package init(root: String, login: String) throws {
        self.root = root
        try login.write(toFile: root + "/login", atomically: true, encoding: .utf8)
        try Self.program.write(toFile: root + "/server.py", atomically: true, encoding: .utf8)
        let out = Pipe()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-B", root + "/server.py", root]
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var printed = Data()
        while !printed.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            printed += chunk
        }
        guard let p = Int(String(decoding: printed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            process.waitUntilExit()
            throw XCTSkip("the git HTTP server did not start")
        }
        port = p
    }

    /// The HTTP requests the server answered, one line each: `401` without credentials, `bad`
    /// with wrong ones, `ok` with the right ones.
    package var requests: [String] {
        ((try? String(contentsOfFile: root + "/requests", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    package func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// The server: every request must carry the login; then git http-backend answers it (CGI).
    private static let program = #"""
    import base64, http.server, os, subprocess, sys
    root = sys.argv[1]
    login = open(os.path.join(root, "login")).read()
    expected = "Basic " + base64.b64encode(login.encode()).decode()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def note(self, what):
            with open(os.path.join(root, "requests"), "a") as f:
                f.write(what + "\n")

        def do_GET(self):
            self.serve()

        def do_POST(self):
            self.serve()

        def serve(self):
            auth = self.headers.get("Authorization")
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if auth != expected:
                self.note("bad" if auth else "401")
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="keychainfs test"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.note("ok")
            path, _, query = self.path.partition("?")
            env = {"GIT_PROJECT_ROOT": root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path, "QUERY_STRING": query,
                   "REQUEST_METHOD": self.command, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                   "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": login.split(":")[0], "REMOTE_ADDR": "127.0.0.1",
                   "GIT_CONFIG_NOSYSTEM": "1", "HOME": root, "PATH": "/usr/bin:/bin"}
            if self.headers.get("Git-Protocol"):
                env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
            if self.headers.get("Content-Encoding"):
                env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
            out = subprocess.run(["/usr/lib/git-core/git-http-backend"], input=body, env=env, capture_output=True).stdout
            head, _, rest = out.partition(b"\r\n\r\n")
            status, headers = 200, []
            for line in head.decode().split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.strip().split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(rest)))
            self.end_headers()
            self.wfile.write(rest)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
    """#
}
