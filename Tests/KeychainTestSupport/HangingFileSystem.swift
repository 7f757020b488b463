import Foundation
import XCTest

/// A FUSE file system an ordinary user mounts with fusermount3 whose FLUSH (and flock unlock)
/// never answers another user (Attackers/hangfs.c): whoever closes a descriptor of its file
/// that it did not open waits in the kernel (`request_wait_answer`) until the program ends,
/// unless it is one of the processes the file system spares.
package final class HangingFileSystem {
    /// The mountpoint, owned by the user; its one file is `file`.
    package let mountpoint: String
    package var file: String { mountpoint + "/f" }
    private let process: BackgroundProcess

    /// Builds Attackers/hangfs.c into `scratch` once per scratch directory. - Throws: `XCTSkip`
    /// without gcc or libfuse3-dev.
    package static func build(in scratch: String) throws -> String {
        let binary = scratch + "/hangfs"
        if access(binary, X_OK) == 0 { return binary }
        guard access("/usr/bin/gcc", X_OK) == 0 else { throw XCTSkip("gcc is needed to build hangfs (scripts/setup.sh)") }
        let flags = try runProgram(["/usr/bin/pkg-config", "--cflags", "--libs", "fuse3"])
        guard flags.status == 0 else { throw XCTSkip("libfuse3-dev is needed to build hangfs (scripts/setup.sh)") }
        let source = Attackers.directory + "/hangfs.c"
        let built = try runProgram(["/usr/bin/gcc", "-O2", "-Wall", "-o", binary, source]
                                   + flags.stdoutText.split(whereSeparator: \.isWhitespace).map(String.init))
        guard built.status == 0 else {
            XCTFail("hangfs does not build: \(built.stderr)")
            throw AttackStepFailed(description: "hangfs build")
        }
        chmod(binary, 0o755)
        return binary
    }

    /// Mounts a new one at `scratch/NAME` as `user` and waits until it serves.
    /// - Parameter sparing: processes whose requests it answers too, as its user's (an attacker
    ///   who aims past a bus daemon that hands a descriptor on and then closes its own copy).
    package init(as user: TestUser, in scratch: String, name: String, sparing: [pid_t] = []) throws {
        let binary = try Self.build(in: scratch)
        mountpoint = scratch + "/" + name
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: false)
        chown(mountpoint, user.uid, user.gid)
        process = try BackgroundProcess(user.setpriv(initGroups: false) + [binary, mountpoint] + sparing.map { String($0) },
                                        environment: ["PATH": "/usr/bin:/bin"], errorPath: scratch + "/" + name + ".err")
        _ = try process.expect("mounted", within: 20)
    }

    /// A line the program printed for a request it keeps (`held flush uid U pid P`), if one
    /// comes within `seconds`.
    package func heldRequest(within seconds: Double) -> String? { process.line(within: seconds) }

    /// Ends the program (the kernel then fails what it held, freeing whoever waited) and
    /// detaches the mount, which the program's end leaves behind.
    package func stop() {
        process.stop()
        if MountTestCase.isMounted(mountpoint) { _ = try? runProgram(["/bin/umount", "-l", mountpoint], timeout: 20) }
        rmdir(mountpoint)
    }

    deinit { stop() }
}

/// The kernel functions the threads of `pid` sleep in (/proc/PID/task/TID/wchan), by thread
/// name (`comm`).
package func threadWaits(of pid: pid_t) -> [(thread: String, wchan: String)] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return tasks.compactMap { tid in
        let base = "/proc/\(pid)/task/\(tid)/"
        guard let comm = try? String(contentsOfFile: base + "comm", encoding: .utf8),
              let wchan = try? String(contentsOfFile: base + "wchan", encoding: .utf8) else { return nil }
        return (comm.trimmingCharacters(in: .whitespacesAndNewlines), wchan.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
