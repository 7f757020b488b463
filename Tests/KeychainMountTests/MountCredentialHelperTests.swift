import Foundation
import KeychainTestSupport
import XCTest

/// What git's and docker's helpers store reads through the mount as any internet password does
/// (`/.internet/<server>/<account>%~qualifiers`), and the reverse: an item the CLI adds with the
/// same attributes answers git, and removing the file in the mount erases the credential.
final class MountCredentialHelperTests: MountTestCase {
    func helper(_ argv: [String], _ input: String) throws -> CLIHarness.Result {
        let r = try Spawn.run(argv, environment: h.environment, input: Data(input.utf8), timeout: 60)
        return CLIHarness.Result(status: r.status, stdout: String(decoding: r.out, as: UTF8.self),
                                 stderr: String(decoding: r.err, as: UTF8.self), elapsed: r.elapsed)
    }

    func testHelperCredentialsAreFilesInTheMountAndTheMountErasesThem() throws {
        guard access(CredentialHelpers.git, X_OK) == 0, access(CredentialHelpers.docker, X_OK) == 0 else {
            throw XCTSkip("the credential helpers are not built")
        }
        XCTAssertEqual(try helper([CredentialHelpers.git, "store"],
                                  "protocol=https\nhost=git.example.com:8443\nusername=alice\npassword=from git\n").status, 0)
        XCTAssertEqual(try helper([CredentialHelpers.docker, "store"],
                                  #"{"ServerURL":"https://registry.example.com","Username":"bob","Secret":"from docker"}"#).status, 0)
        let mnt = try mount()

        // One name per item, its qualifiers in the documented order.
        let git = mnt + "/.internet/git.example.com"
        XCTAssertEqual(FS.list(git).names, ["alice%~ptcl=htps%~port=8443%~atyp=dflt"])
        XCTAssertEqual(FS.read(git + "/alice%~ptcl=htps%~port=8443%~atyp=dflt").bytes, Array("from git".utf8))
        let docker = mnt + "/.internet/registry.example.com"
        XCTAssertEqual(FS.list(docker).names, ["bob%~ptcl=htps"])
        XCTAssertEqual(FS.read(docker + "/bob%~ptcl=htps").bytes, Array("from docker".utf8))
        XCTAssertEqual(FS.xattr(docker + "/bob%~ptcl=htps", "user.keychain.label"), "Docker Credentials")

        // An item the CLI adds with osxkeychain's attributes answers git, and shows in the mount.
        XCTAssertEqual(try h.run(["add-internet-password", "-s", "git.example.com", "-a", "carol", "-r", "htps", "-t", "dflt",
                                  "-w", "from the CLI"]).status, 0)
        XCTAssertEqual(try helper([CredentialHelpers.git, "get"], "protocol=https\nhost=git.example.com\nusername=carol\n").stdout,
                       "password=from the CLI\n")
        XCTAssertEqual(FS.read(git + "/carol%~ptcl=htps%~atyp=dflt").bytes, Array("from the CLI".utf8))

        // rm in the mount is an erase: git and docker find nothing after it.
        XCTAssertEqual(unlink(git + "/alice%~ptcl=htps%~port=8443%~atyp=dflt"), 0, String(cString: strerror(errno)))
        XCTAssertEqual(try helper([CredentialHelpers.git, "get"], "protocol=https\nhost=git.example.com:8443\nusername=alice\n").stdout, "")
        XCTAssertEqual(unlink(docker + "/bob%~ptcl=htps"), 0, String(cString: strerror(errno)))
        XCTAssertEqual(try helper([CredentialHelpers.docker, "get"], "https://registry.example.com").stdout,
                       "credentials not found in native keychain\n")
    }
}
