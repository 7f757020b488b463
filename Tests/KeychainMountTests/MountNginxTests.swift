import Foundation
import Glibc
import KeychainTestSupport
import Security
import XCTest

/// A real TLS server reads its certificate and key from the mount (PRODUCT 12): nginx serves
/// with `ssl_certificate` and `ssl_certificate_key` in `/.certificates` and `/.keys`, curl
/// trusts the certificate and gets the page; after `lock-keychain` the key file is gone, so a
/// reload and a fresh start of nginx fail. nginx runs as root with its own prefix in the
/// harness's directory, on a free loopback port, and is stopped even when the test fails.
final class MountNginxTests: MountTestCase {
    static let nginx = "/usr/sbin/nginx"
    static let curl = "/usr/bin/curl"

    /// A loopback port nobody listens on now (bound to port 0, then released).
    func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard bound else { throw MountFailed(description: "no free port") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    func config(prefix: String, port: Int, mount: String) -> String {
        """
        daemon off;
        worker_processes 1;
        pid \(prefix)/nginx.pid;
        error_log \(prefix)/error.log;
        events { worker_connections 16; }
        http {
            access_log off;
            client_body_temp_path \(prefix)/body;
            proxy_temp_path \(prefix)/proxy;
            fastcgi_temp_path \(prefix)/fastcgi;
            uwsgi_temp_path \(prefix)/uwsgi;
            scgi_temp_path \(prefix)/scgi;
            server {
                listen 127.0.0.1:\(port) ssl;
                ssl_certificate \(mount)/.certificates/server.pem;
                ssl_certificate_key \(mount)/.keys/server.pem;
                location / { return 200 "served from the keychain\\n"; }
            }
        }

        """
    }

    func testNginxServesTLSFromTheMountUntilTheLock() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.nginx) else { throw XCTSkip("nginx is not installed (scripts/setup.sh installs nginx-light)") }
        guard FileManager.default.isExecutableFile(atPath: Self.curl) else { throw XCTSkip("curl is not installed") }
        let material = URL(fileURLWithPath: h.dir + "/material")
        try FileManager.default.createDirectory(at: material, withIntermediateDirectories: true)
        let tls = try TLSMaterial(in: material, commonName: "localhost")
        try storeTLS(tls, label: "server")
        let mnt = try mount()

        let prefix = h.dir + "/nginx"
        try FileManager.default.createDirectory(atPath: prefix, withIntermediateDirectories: true)
        let port = try freePort()
        let conf = prefix + "/nginx.conf"
        try config(prefix: prefix, port: port, mount: mnt).write(toFile: conf, atomically: true, encoding: .utf8)
        let args = ["-p", prefix, "-c", conf, "-e", prefix + "/error.log"]

        let server = Process()
        server.executableURL = URL(fileURLWithPath: Self.nginx)
        server.arguments = args
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        // Stopped before the mount goes, whatever happens below.
        addTeardownBlock {
            if server.isRunning {
                kill(server.processIdentifier, SIGTERM)
                server.waitUntilExit()
            }
        }

        // Ready when it answers: each try is a full TLS handshake against the certificate.
        let url = "https://localhost:\(port)/"
        let curlArgs = [Self.curl, "-sS", "--cacert", material.path + "/cert-0x1001.pem", "--resolve", "localhost:\(port):127.0.0.1", url]
        var answer = try runProgram(curlArgs)
        var tries = 0
        while answer.status != 0 && server.isRunning && tries < 100 {
            usleep(100_000)
            tries += 1
            answer = try runProgram(curlArgs)
        }
        XCTAssertEqual(answer.status, 0, "curl: \(answer); nginx log: \((try? String(contentsOfFile: prefix + "/error.log", encoding: .utf8)) ?? "")")
        XCTAssertEqual(answer.stdoutText, "served from the keychain\n")
        XCTAssertEqual(try runProgram([Self.nginx, "-t"] + args).status, 0, "nginx -t reads the key")

        XCTAssertEqual(try h.run(["lock-keychain"]).status, 0)
        assertErrno(FS.stat(mnt + "/.keys/server.pem").errno, ENOENT, "the key file is gone")
        // The running server keeps the key it loaded; reloading it and starting another fail.
        let test = try runProgram([Self.nginx, "-t"] + args)
        XCTAssertNotEqual(test.status, 0, "nginx -t after the lock")
        XCTAssertTrue(test.stderr.contains("server.pem"), test.stderr)
        // `nginx -s reload` reads the whole configuration, key included, before it signals: it fails.
        let reload = try runProgram([Self.nginx, "-s", "reload"] + args)
        XCTAssertNotEqual(reload.status, 0, "nginx -s reload after the lock: \(reload)")
        XCTAssertTrue(reload.stderr.contains("server.pem"), reload.stderr)
        // The master's own reload (SIGHUP, what systemd's reload sends) fails too and says so.
        kill(server.processIdentifier, SIGHUP)
        var log = ""
        for _ in 0..<100 where !log.contains("cannot load certificate") {
            usleep(100_000)
            log = (try? String(contentsOfFile: prefix + "/error.log", encoding: .utf8)) ?? ""
        }
        XCTAssertTrue(log.contains("cannot load certificate"), "the reload failed: \(log)")
        kill(server.processIdentifier, SIGTERM)
        server.waitUntilExit()
        let restart = try runProgram([Self.nginx] + args, timeout: 20)
        XCTAssertNotEqual(restart.status, 0, "a restart cannot load the key: \(restart)")
    }
}
