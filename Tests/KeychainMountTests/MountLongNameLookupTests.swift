import Foundation
import KeychainTestSupport
import XCTest

/// A lookup of a name that cannot exist is cheap (PRODUCT 11): a hashed long name (`%H` and 32
/// hex digits) no item has costs about what any missing name costs, not a decrypting scan of
/// the service or of the vault.
final class MountLongNameLookupTests: MountTestCase {
    func randomHashedName() -> String {
        "%H" + String((0..<32).map { _ in "0123456789ABCDEF".randomElement()! })
    }

    func testABogusHashedNameCostsAboutWhatAMissingNameCosts() throws {
        let mnt = try mount()
        try add("many", "seed", "x")
        for i in 0..<2000 {
            let e = FS.write(mnt + "/many/a\(i)", "s\(i)")
            if e != FS.ok { return XCTFail("write \(i): \(FS.name(e))") }
        }
        // A real long name still resolves, through its hash.
        let long = String(repeating: "L", count: 300)
        try add("many", long, "long-secret")
        let name = String(decoding: try hashedName(Array(long.utf8), scratch: h.dir), as: UTF8.self)
        XCTAssertEqual(FS.read(mnt + "/many/" + name).bytes.map { String(decoding: $0, as: UTF8.self) }, "long-secret")
        assertErrno(FS.stat(mnt + "/many/" + randomHashedName()).errno, ENOENT, "a bogus hashed name")

        var missing = 0.0, hashed = 0.0
        for round in 0..<5 {
            for i in 0..<20 {
                let t0 = Date()
                assertErrno(FS.stat(mnt + "/many/missing-\(round)-\(i)").errno, ENOENT, "a missing name")
                let t1 = Date()
                assertErrno(FS.stat(mnt + "/many/" + randomHashedName()).errno, ENOENT, "a bogus hashed account")
                assertErrno(FS.stat(mnt + "/" + randomHashedName()).errno, ENOENT, "a bogus hashed service")
                let t2 = Date()
                missing += t1.timeIntervalSince(t0)
                hashed += t2.timeIntervalSince(t1) / 2
            }
        }
        XCTAssertLessThan(hashed, 10 * missing + 0.1,
                          "100 bogus hashed lookups took \(Int(hashed * 1000)) ms, 100 missing names \(Int(missing * 1000)) ms")
    }
}
