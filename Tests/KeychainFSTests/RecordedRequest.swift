import Foundation
import Glibc
import KeychainfsAccess
import KeychainCore
import KeychainCrypto
@testable import KeychainFS
import Synchronization
import XCTest

/// What a node answered, as the kernel would have received it.
enum Reply: Sendable {
    case error(Int32)
    case entry(ino: UInt64, attr: stat, timeout: Double)
    case create(ino: UInt64, attr: stat, opened: OpenInfo)
    case attr(stat)
    case open(OpenInfo)
    case buffer([UInt8])
    case written(Int)
    case xattrSize(Int)
    case directory([DirectoryEntry])

    /// The errno of an error reply (0 for `ok`); nil for any other reply.
    var errno: Int32? { if case .error(let e) = self { return e } else { return nil } }
}

/// A kernel request answered into a record instead of /dev/fuse: the caller is whoever the test
/// says (the kernel's uid and gid; the pid is this process, whose /proc entry is read).
final class RecordedRequest: FileRequest {
    let caller: (uid: UInt32, gid: UInt32, pid: Int32)
    private let replies = Mutex<[Reply]>([])

    init(uid: UInt32 = getuid(), gid: UInt32 = getgid()) {
        caller = (uid, gid, getpid())
    }

    /// The one reply, failing the test when there is none or more than one.
    func reply(file: StaticString = #filePath, line: UInt = #line) -> Reply? {
        let all = replies.withLock { $0 }
        XCTAssertEqual(all.count, 1, "replies: \(all)", file: file, line: line)
        return all.first
    }

    private func record(_ r: Reply) { replies.withLock { $0.append(r) } }

    func error(_ errno: Int32) { record(.error(errno)) }
    func ok() { record(.error(0)) }
    func entry(ino: UInt64, attr: stat, timeout: Double) { record(.entry(ino: ino, attr: attr, timeout: timeout)) }
    func create(ino: UInt64, attr: stat, timeout: Double, opened: OpenInfo) { record(.create(ino: ino, attr: attr, opened: opened)) }
    func attr(_ st: stat, timeout: Double) { record(.attr(st)) }
    func open(_ opened: OpenInfo) { record(.open(opened)) }
    func buffer(_ bytes: UnsafeRawBufferPointer) { record(.buffer(Array(bytes))) }
    func written(_ count: Int) { record(.written(count)) }
    func xattrSize(_ count: Int) { record(.xattrSize(count)) }

    /// Packs as the kernel's buffer would: a dirent is 24 bytes and the name, padded to 8; a
    /// READDIRPLUS one carries a 128-byte entry before it.
    func directory(offset: Int, size: Int, plus: Bool, entry: (Int) -> DirectoryEntry?, left: (Int, DirectoryEntry) -> Void) {
        var out: [DirectoryEntry] = []
        var used = 0
        var index = offset
        while let e = entry(index) {
            let needed = (plus ? 128 : 0) + (24 + e.name.count + 7) / 8 * 8
            if needed > size - used {
                left(index, e)
                break
            }
            used += needed
            out.append(e)
            index += 1
        }
        record(.directory(out))
    }
}

/// The daemon's side of a mount, for node tests: a real access-group table, and the audit lines
/// and change reports it was given.
final class RecordingPolicy: MountPolicy {
    let table: AccessGroupTable
    let events = Mutex<[String]>([])

    init(_ table: AccessGroupTable) { self.table = table }

    func entitledGroups(_ caller: CallerIdentity) -> [String] { table.entitled(caller) }
    func writableGroups(_ caller: CallerIdentity) -> [String] { table.writable(caller) }
    func group(named name: String) -> AccessGroup? { table.group(named: name) }
    func allGroups() -> [String] { table.groups.map(\.name) }
    func approvePresence(ref: PersistentRef, attributes: Attributes, caller: CallerIdentity) -> KeychainStatus { .authFailed }
    func itemChanged(_ kind: ChangeKind, itemClass: ItemClass, service: [UInt8], account: [UInt8]?,
                     previous: (service: [UInt8], account: [UInt8]?)?, groups: [String]?, from origin: MountServer) {
        let name = String(decoding: service, as: UTF8.self) + (account.map { "/" + String(decoding: $0, as: UTF8.self) } ?? "")
        events.withLock { $0.append("\(kind) \(name) \(groups ?? [])") }
    }
    func audit(_ event: AuditEvent, caller: CallerIdentity, detail: String) throws { events.withLock { $0.append("audit \(event)") } }
    func audit(_ event: AuditEvent, caller: CallerIdentity, item: PersistentRef) throws { events.withLock { $0.append("audit \(event)") } }
    func auditRepeatable(_ event: AuditEvent, caller: CallerIdentity, item: PersistentRef) throws {
        events.withLock { $0.append("audit \(event)") }
    }
    var directoryOwner: (uid: UInt32, gid: UInt32) { (0, 0) }
}

/// A vault in a scratch directory and a mount server over it that is never mounted: its nodes
/// are asked directly, as the kernel's requests would ask them.
class NodeTestCase: XCTestCase {
    var dir: String!
    var vault: Vault!
    var policy: RecordingPolicy!
    var mount: MountServer!
    /// A uid no group's owner has: entitled to nothing with the groups' modes below.
    let stranger: UInt32 = 54_321
    /// The gid of group `team`, readable by its members (mode 0640); no process has it here.
    let teamGID: UInt32 = 54_320

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "keychainfs-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let device = try DeviceKey.loadOrCreate(at: dir + "/device.key")
        vault = try Vault.create(at: dir + "/test.vault", passphrase: try SecureBytes(copying: Array("pass".utf8)), kdf: .minimum,
                                 deviceKey: device)
        policy = RecordingPolicy(AccessGroupTable(groups: [
            AccessGroup(name: "default", owner: getuid(), gid: getgid(), mode: 0o600),
            AccessGroup(name: "team", owner: getuid(), gid: teamGID, mode: 0o640),
        ]))
        mount = try makeMount()
    }

    override func tearDown() {
        mount = nil
        vault = nil
        if let dir { try? FileManager.default.removeItem(atPath: dir) }
    }

    func makeMount(_ options: String = "") throws -> MountServer {
        MountServer(mountpoint: dir + "/mnt", options: try MountOptions(parsing: options), vault: vault, policy: policy)
    }

    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    func addPassword(_ service: String, _ account: String, _ secret: String, group: String = "default", _ extra: Attributes = [:]) throws {
        var attrs: Attributes = ["class": "genp", "svce": .string(service), "acct": .string(account)]
        attrs.merge(extra) { _, b in b }
        try vault.add(attrs, secret: try SecureBytes(copying: Array(secret.utf8)), accessGroups: [group])
    }

    /// Runs one request against `server` (the test's mount by default) and returns its reply.
    func ask(on server: MountServer? = nil, uid: UInt32 = getuid(), file: StaticString = #filePath, line: UInt = #line,
             _ body: (MountServer, RecordedRequest) -> Void) -> Reply? {
        let req = RecordedRequest(uid: uid, gid: uid == getuid() ? getgid() : uid)
        body(server ?? mount, req)
        return req.reply(file: file, line: line)
    }

    func errno(on server: MountServer? = nil, uid: UInt32 = getuid(), file: StaticString = #filePath, line: UInt = #line,
               _ body: (MountServer, RecordedRequest) -> Void) -> Int32? {
        ask(on: server, uid: uid, file: file, line: line, body)?.errno
    }

    /// The inode a name in `parent` looks up to; fails the test when the lookup fails.
    func inode(_ name: String, in parent: UInt64 = InodeTable.rootIno, file: StaticString = #filePath, line: UInt = #line) -> UInt64 {
        guard case .entry(let ino, _, _)? = ask(file: file, line: line, { $0.lookup($1, parent: parent, name: bytes(name)) }) else {
            XCTFail("no entry for \(name)", file: file, line: line)
            return 0
        }
        return ino
    }

    /// The names a directory lists (after "." and ".."), through opendir, readdir(plus) and
    /// releasedir; with their entries.
    func list(_ ino: UInt64, plus: Bool = true, uid: UInt32 = getuid(), file: StaticString = #filePath, line: UInt = #line) -> [DirectoryEntry] {
        guard case .open(let opened)? = ask(uid: uid, file: file, line: line, { $0.opendir($1, ino: ino, opened: OpenInfo(flags: O_RDONLY)) }) else {
            XCTFail("opendir failed", file: file, line: line)
            return []
        }
        var all: [DirectoryEntry] = []
        while true {
            guard case .directory(let part)? = ask(file: file, line: line, { $0.readdir($1, size: 4096, offset: all.count, handle: opened.handle, plus: plus) })
            else { break }
            if part.isEmpty { break }
            all += part
        }
        XCTAssertEqual(errno(file: file, line: line) { $0.releasedir($1, handle: opened.handle) }, 0)
        XCTAssertEqual(all.prefix(2).map { String(decoding: $0.name, as: UTF8.self) }, [".", ".."], file: file, line: line)
        return Array(all.dropFirst(2))
    }

    func names(_ entries: [DirectoryEntry]) -> [String] { entries.map { String(decoding: $0.name, as: UTF8.self) } }

    /// Opens `ino` with `flags`; the handle, or nil with the errno in `failed`.
    func open(_ ino: UInt64, _ flags: Int32 = O_RDONLY, uid: UInt32 = getuid(), file: StaticString = #filePath, line: UInt = #line) -> Reply? {
        ask(uid: uid, file: file, line: line) { $0.open($1, ino: ino, opened: OpenInfo(flags: flags)) }
    }

    /// open, read and release: the file's bytes.
    func contents(_ ino: UInt64, file: StaticString = #filePath, line: UInt = #line) -> [UInt8]? {
        guard case .open(let o)? = open(ino, file: file, line: line) else { return nil }
        defer { _ = errno { $0.release($1, handle: o.handle) } }
        guard case .buffer(let b)? = ask(file: file, line: line, { $0.read($1, size: 65536, offset: 0, handle: o.handle) }) else { return nil }
        return b
    }
}

extension Vault {
    /// The secret of one generic password, as SecItemCopyMatching with r_Data returns it.
    func password(service: String, account: String, groups: [String]) throws -> String {
        let r = try copyMatching(["class": "genp", "svce": .string(service), "acct": .string(account), "r_Data": true],
                                 accessGroups: groups)
        guard let data = r.value?.data else { throw KeychainStatus.decode }
        return data.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }
}
