import Foundation
import KeychainTestSupport
import XCTest

/// `keychainfs podman-secret` as podman's shell secret driver: real podman stores a secret
/// through it, a container started with `--secret` reads the keychain item's exact bytes, and
/// `podman secret rm` deletes the item. Podman runs rootful with its storage, run and secrets
/// directories inside the harness's scratch directory, and the container's root file system
/// is a directory holding /bin/cat and its libraries: no image and no registry.
final class CLIPodmanSecretTests: HarnessTestCase {
    static let podman = "/usr/bin/podman"

    var storage: String { h.dir + "/podman" }

    /// podman with this test's own storage; `input` on standard input.
    @discardableResult
    func podman(_ args: [String], input: Data = Data(), timeout: Double = 120) throws -> CLIHarness.Result {
        let global = ["--root", storage + "/root", "--runroot", storage + "/run", "--tmpdir", storage + "/tmp",
                      "--storage-driver", "vfs", "--runtime", "runc"]
        let r = try Spawn.run([Self.podman] + global + args, environment: h.environment, input: input, timeout: timeout)
        XCTAssertFalse(r.timedOut, "podman \(args) did not finish")
        return CLIHarness.Result(status: r.status, stdout: String(decoding: r.out, as: UTF8.self), stderr: String(decoding: r.err, as: UTF8.self))
    }

    /// A root file system with /bin/cat and the libraries `ldd` names.
    func rootfs() throws -> String {
        let root = h.dir + "/rootfs"
        let ldd = try Spawn.run(["/usr/bin/ldd", "/bin/cat"], environment: h.environment, input: Data(), timeout: 20)
        let libraries = String(decoding: ldd.out, as: UTF8.self).split(separator: "\n").compactMap { line -> String? in
            line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init).first { $0.hasPrefix("/") }
        }
        for file in ["/bin/cat"] + libraries {
            let target = root + file
            try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: CLIHarness.realPath(file), toPath: target)
        }
        return root
    }

    override func tearDown() {
        // Containers are --rm and podman's storage, run and secrets directories are in h.dir,
        // which the harness removes. A podman killed midway may leave a mount there (its
        // container's /dev/shm): detached first, so that the removal goes through.
        if h != nil, let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) {
            for line in mounts.split(separator: "\n") {
                let point = line.split(separator: " ").dropFirst().first.map(String.init) ?? ""
                if point.hasPrefix(storage + "/") { umount2(point, Int32(MNT_DETACH)) }
            }
        }
        super.tearDown()
    }

    func testAContainerReadsTheKeychainItemThroughSecret() throws {
        guard access(Self.podman, X_OK) == 0 else { throw XCTSkip("podman is not installed (scripts/setup.sh installs it)") }
        let root = try rootfs()
        let driver = ["list", "lookup", "store", "delete"].map { "\($0)=\(CLIHarness.binary) podman-secret \($0) \(h.vault)" }
        let name = "db-\(UUID().uuidString.prefix(8))"
        let bytes = Data("line one\nline two, exactly\n".utf8) + Data([0xff, 0x00, 0x0a])

        let create = try podman(["secret", "create", "--driver", "shell", "--driver-opts", driver.joined(separator: ","), name, "-"], input: bytes)
        XCTAssertEqual(create.status, 0, "\(create)")
        let id = create.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(id.count, 25, "podman's id: \(create)")

        // The item: service podman-secret, account the id, the bytes as given.
        let find = try h.run(["find-generic-password", "-s", "podman-secret", "-a", id, "--json", "-w"])
        XCTAssertEqual(find.status, 0, "\(find)")
        XCTAssertEqual(try h.run(["podman-secret", "list"]).stdout, id + "\n")
        let lookup = try Spawn.run([CLIHarness.binary, "podman-secret", "lookup"], environment: h.environment.merging(["SECRET_ID": id]) { $1 },
                                   input: Data(), timeout: 30)
        XCTAssertEqual(lookup.out, bytes, "lookup prints the exact bytes")

        // The container reads them; then they change in the keychain and the next container sees that.
        let run = ["run", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                   "--secret", name, "--rootfs", root, "/bin/cat", "/run/secrets/\(name)"]
        var r = try Spawn.run([Self.podman, "--root", storage + "/root", "--runroot", storage + "/run", "--tmpdir", storage + "/tmp",
                               "--storage-driver", "vfs", "--runtime", "runc"] + run, environment: h.environment, input: Data(), timeout: 120)
        XCTAssertEqual(r.status, 0, String(decoding: r.err, as: UTF8.self))
        XCTAssertEqual(r.out, bytes)
        XCTAssertEqual(try h.run(["add-generic-password", "-U", "-s", "podman-secret", "-a", id, "-w", "-"], input: "rotated").status, 0)
        r = try Spawn.run([Self.podman, "--root", storage + "/root", "--runroot", storage + "/run", "--tmpdir", storage + "/tmp",
                           "--storage-driver", "vfs", "--runtime", "runc"] + run, environment: h.environment, input: Data(), timeout: 120)
        XCTAssertEqual(String(decoding: r.out, as: UTF8.self), "rotated", String(decoding: r.err, as: UTF8.self))

        // podman secret rm deletes the item.
        XCTAssertEqual(try podman(["secret", "rm", name]).status, 0)
        XCTAssertEqual(try h.run(["find-generic-password", "-s", "podman-secret", "-a", id]).status, 44)
        XCTAssertEqual(try h.run(["podman-secret", "list"]).stdout, "")
    }

    func testDriverCommandsAsPodmanRunsThem() throws {
        // What podman's shell driver does, without podman: SECRET_ID in the environment.
        func driver(_ verb: String, id: String?, input: Data = Data()) throws -> (status: Int32, out: Data, err: String) {
            var env = h.environment
            env["SECRET_ID"] = id
            let r = try Spawn.run(["/bin/sh", "-c", "'\(CLIHarness.binary)' podman-secret \(verb)"], environment: env, input: input, timeout: 30)
            return (r.status, r.out, String(decoding: r.err, as: UTF8.self))
        }
        let id = "0123456789abcdef012345678"
        XCTAssertEqual(try driver("lookup", id: id).status, 44, "none yet")
        XCTAssertEqual(try driver("store", id: id, input: Data("first\n".utf8)).status, 0)
        XCTAssertEqual(try driver("store", id: id, input: Data("second\n".utf8)).status, 0, "a second store replaces")
        XCTAssertEqual(try driver("lookup", id: id).out, Data("second\n".utf8))
        XCTAssertEqual(try driver("list", id: nil).out, Data((id + "\n").utf8))
        let noID = try driver("lookup", id: nil)
        XCTAssertEqual(noID.status, 2)
        XCTAssertTrue(noID.err.contains("$SECRET_ID"), noID.err)
        XCTAssertEqual(try driver("delete", id: id).status, 0)
        XCTAssertEqual(try driver("delete", id: id).status, 44)
        XCTAssertEqual(try driver("list", id: nil).out, Data())
        XCTAssertEqual(try driver("nonsense", id: id).status, 2)
    }
}
