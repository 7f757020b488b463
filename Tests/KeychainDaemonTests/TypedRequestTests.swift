import KeychainfsAccess
import KeychainCore
import KeychainCrypto
import KeychainProtocol
import XCTest
@testable import KeychainDaemon

/// The typed requests on top of the codec: each encodes to the bytes the string-keyed options
/// gave (the wire format is unchanged), decodes back to itself, and a request with an option
/// missing or of the wrong type is answered by a real daemon with the documented status.
final class TypedRequestTests: XCTestCase {
    private var d: InProcessDaemon!

    override func setUpWithError() throws { d = try InProcessDaemon() }
    override func tearDown() { d?.stop() }

    private let ref = Array("keys".utf8) + [UInt8](repeating: 0x11, count: 16)
    private let sign = "algid:sign:ECDSA:message-X962:SHA256"

    private func secret(_ s: String) throws -> SecureBytes { try SecureBytes(copying: Array(s.utf8)) }

    private func bytes(_ r: Request) throws -> [UInt8] { try r.encoded().withUnsafeBytes { Array($0) } }

    /// A request's payload as the encoder wrote it before options were typed: the options as a
    /// string-keyed record, written with `AttributeCoding`'s `Fields` entry.
    private func legacyBytes(_ op: KeychainProtocol.Operation, query: Attributes = [:], options: Fields, secrets: [String] = []) -> [UInt8] {
        var w = ByteWriter()
        w.u16(1)
        w.u8(op.rawValue)
        AttributeCoding.write(query, into: &w)
        AttributeCoding.write(Attributes(), into: &w)
        AttributeCoding.write(options, into: &w)
        w.u8(UInt8(secrets.count))
        for s in secrets { w.lengthPrefixed(Array(s.utf8)) }
        return w.bytes
    }

    func testTypedRequestsEncodeAsTheStringKeyedOptionsDidAndDecodeBack() throws {
        let query = AuditQuery(since: 100, until: 200, uid: 1000, events: ["read", "add"], item: .named(service: "s", account: "a"))
        try check("sign", W.useKey(KeyUseRequest(ref: ref, use: .sign, algorithm: sign, input: try secret("message"))),
                  legacyBytes(.useKey, query: ["v_PersistentRef": .data(ref)], options: ["use": "sign", "algorithm": .string(sign)],
                              secrets: ["message"]))
        try check("key exchange", W.useKey(KeyUseRequest(ref: ref, use: .keyExchange, algorithm: "algid:keyexchange:ECDH:KDFX963:SHA256",
                                                        peer: [4, 1, 2], requestedSize: 32, sharedInfo: [9], input: try secret(""))),
                  legacyBytes(.useKey, query: ["v_PersistentRef": .data(ref)],
                              options: ["use": "keyExchange", "algorithm": "algid:keyexchange:ECDH:KDFX963:SHA256",
                                        "peer": .data([4, 1, 2]), "requestedSize": .number(32), "sharedInfo": .data([9])], secrets: [""]))
        try check("unlock", W.unlock(.passphrase(try secret("pass"))), legacyBytes(.unlock, options: [:], secrets: ["pass"]))
        try check("unlock by program", W.unlock(.byApprovalProgram(for: nil)), legacyBytes(.unlock, options: ["by": "approval-program"]))
        try check("unlock by program for a relayed caller", W.unlock(.byApprovalProgram(for: RelayedCaller(uid: 1000, pid: 4242))),
                  legacyBytes(.unlock, options: ["by": "approval-program", "for-uid": .number(1000), "for-pid": .number(4242)]))
        try check("passphrase", W.changePassphrase(PassphraseChange(old: try secret("o"), new: try secret("n"), kdf: "sensitive")),
                  legacyBytes(.changePassphrase, options: ["kdf": "sensitive"], secrets: ["o", "n"]))
        try check("settings", W.setSettings(SettingsChange(lockTimeout: 300, approvalProgram: "/bin/true", approvalTimeout: 30,
                                                          approvalRemember: 60, auditMaxSize: 0)),
                  legacyBytes(.setSettings, options: ["lock-timeout": .number(300), "approval-program": "/bin/true",
                                                      "approval-timeout": .number(30), "approval-remember": .number(60),
                                                      "audit-max-size": .number(0)]))
        try check("audit verify", W.audit(.verify), legacyBytes(.audit, options: ["verify": .bool(true)]))
        try check("audit rotate", W.audit(.rotate), legacyBytes(.audit, options: ["rotate": .bool(true)]))
        try check("audit read", W.audit(.read(query)),
                  legacyBytes(.audit, options: ["since": .number(100), "until": .number(200), "uid": .number(1000),
                                                "events": "read,add", "item-service": "s", "item-account": "a"]))
        try check("audit ref", W.audit(.read(AuditQuery(item: .reference(Hex.encode(ref))))),
                  legacyBytes(.audit, options: ["item-ref": .string(Hex.encode(ref))]))
        try check("sync init", W.sync(.initCircle(server: "host=db", name: "a")),
                  legacyBytes(.sync, options: ["verb": "init", "server": "host=db", "name": "a"]))
        try check("sync join", W.sync(.join(server: "host=db", name: "b")),
                  legacyBytes(.sync, options: ["verb": "join", "server": "host=db", "name": "b"]))
        try check("sync approve", W.sync(.approve(code: "ABCD-1234")), legacyBytes(.sync, options: ["verb": "approve", "code": "ABCD-1234"]))
        try check("sync remove", W.sync(.remove(host: "h1")), legacyBytes(.sync, options: ["verb": "remove", "host": "h1"]))
        try check("sync leave", W.sync(.leave), legacyBytes(.sync, options: ["verb": "leave"]))
        try check("sync status", W.sync(.status), legacyBytes(.sync, options: ["verb": "status"]))
        try check("sync set", W.sync(.set(retentionDays: 7, pollMilliseconds: nil)), legacyBytes(.sync, options: ["verb": "set", "retention-days": .number(7)]))
        try check("sync set poll", W.sync(.set(retentionDays: nil, pollMilliseconds: 500)), legacyBytes(.sync, options: ["verb": "set", "poll-ms": .number(500)]))
        try check("sync restore", W.sync(.restore(id: 3)), legacyBytes(.sync, options: ["verb": "restore", "history-id": .number(3)]))
        try check("sync history", W.sync(.history(service: "s", account: nil, secrets: true)),
                  legacyBytes(.sync, options: ["verb": "history", "service": "s", "secrets": .bool(true)]))
        try check("mount", W.mount(.mount(point: "/mnt/k", options: "ro")), legacyBytes(.mount, options: ["mountpoint": "/mnt/k", "options": "ro"]))
        try check("unmount", W.mount(.unmount(point: "/mnt/k")), legacyBytes(.unmount, options: ["mountpoint": "/mnt/k"]))
        try check("watch", W.watch(WatchRequest(service: "s")), legacyBytes(.watch, options: ["service": "s"]))
        try check("watch all", W.watch(WatchRequest()), legacyBytes(.watch, options: [:]))
        try check("export", W.export(.start(passphrase: try secret("bp"), kdf: "interactive", synchronizableOnly: true)),
                  legacyBytes(.export, options: ["kdf": "interactive", "synchronizable-only": .bool(true)], secrets: ["bp"]))
        try check("export piece", W.export(.piece(transfer: 7, offset: 16 << 20)),
                  legacyBytes(.export, options: ["transfer": .number(7), "offset": .number(16 << 20)]))
        try check("import first piece", W.import(.piece(BackupPiece(data: [1, 2], size: 4, policy: .keepNewer, groups: .keep))),
                  legacyBytes(.import, options: ["data": .data([1, 2]), "size": .number(4), "policy": "keep-newer", "groups": "keep"]))
        try check("import last piece", W.import(.piece(BackupPiece(data: [3, 4], size: 4, transfer: 7, policy: .replace, groups: .skip,
                                                                  passphrase: try secret("bp")))),
                  legacyBytes(.import, options: ["data": .data([3, 4]), "size": .number(4), "transfer": .number(7), "policy": "replace",
                                                 "groups": "skip"], secrets: ["bp"]))
        try check("purge", W.import(.purgeOtherDevice), legacyBytes(.import, options: ["purge-other-device": .bool(true)]))
        for (name, typed, legacy) in [
            ("group add", GroupRequest.add(GroupChange(name: "team", owner: 1000, gid: 100, mode: 0o440, grantsLock: true,
                                                        grantsAudit: false, executables: ["/usr/bin/a", "/usr/bin/b"])),
             legacyBytes(.groupAdd, options: ["name": "team", "owner": .number(1000), "gid": .number(100), "mode": .number(0o440),
                                              "lock": .number(1), "audit": .number(0), "exe": "/usr/bin/a\n/usr/bin/b"])),
            ("group set", .set(GroupChange(name: "team", executables: [])), legacyBytes(.groupSet, options: ["name": "team", "exe": ""])),
            ("group remove", .remove(name: "team"), legacyBytes(.groupRemove, options: ["name": "team"])),
            ("group list", .list, legacyBytes(.groupList, options: [:])),
        ] as [(String, GroupRequest, [UInt8])] {
            XCTAssertEqual(try bytes(typed.request), legacy, name)
            let decoded = try GroupRequest(decoding: Request.decode(try SecureBytes(copying: legacy)))
            XCTAssertEqual(try bytes(decoded.request), legacy, "\(name) decodes to the same request")
        }
    }

    /// Each operation's request type, by the operation's name.
    private enum W {
        static func useKey(_ r: KeyUseRequest) -> any TypedRequest { r }
        static func unlock(_ r: UnlockRequest) -> any TypedRequest { r }
        static func changePassphrase(_ r: PassphraseChange) -> any TypedRequest { r }
        static func setSettings(_ r: SettingsChange) -> any TypedRequest { r }
        static func audit(_ r: AuditRequest) -> any TypedRequest { r }
        static func sync(_ r: SyncRequest) -> any TypedRequest { r }
        static func mount(_ r: MountRequest) -> any TypedRequest { r }
        static func watch(_ r: WatchRequest) -> any TypedRequest { r }
        static func export(_ r: ExportRequest) -> any TypedRequest { r }
        static func `import`(_ r: ImportRequest) -> any TypedRequest { r }
    }

    /// The typed request encodes to the legacy bytes, and what the daemon decodes from them (its
    /// row's request type) encodes to them again.
    private func check(_ name: String, _ typed: any TypedRequest, _ legacy: [UInt8]) throws {
        let encoded = try bytes(typed.request)
        XCTAssertEqual(encoded, legacy, name)
        let request = try Request.decode(try SecureBytes(copying: encoded))
        XCTAssertNotNil(OperationTable.row(for: request), "\(name) has a row")
        let decoded = try type(of: typed).init(decoding: request)
        XCTAssertEqual(try bytes(decoded.request), legacy, "\(name) decodes to the same request")
    }

    /// A few payloads as bytes, so a change of the encoding shows here and not on a user's machine.
    func testPinnedPayloads() throws {
        XCTAssertEqual(Hex.encode(try bytes(UnlockRequest.byApprovalProgram(for: nil).request)),
                       "0001020000000000010262790100000010617070726f76616c2d70726f6772616d00")
        XCTAssertEqual(Hex.encode(try bytes(AuditRequest.verify.request)), "00011200000000000106766572696679040100")
        XCTAssertEqual(Hex.encode(try bytes(SyncRequest.remove(host: "h1").request)),
                       "00011e00000000000204686f7374010000000268310476657262010000000672656d6f766500")
    }

    /// Requests with an option missing, of another type or out of its range, each answered by
    /// the daemon over its socket with the status docs/operations.md gives.
    func testMissingOrWronglyTypedOptionsGetTheirStatusFromTheDaemon() throws {
        let input = try secret("message")
        let key: Attributes = ["v_PersistentRef": .data(ref)]
        try expect("useKey without use", Request(.useKey, query: key, options: ["algorithm": .string(sign)], secrets: [input]), .param)
        try expect("useKey use a number", Request(.useKey, query: key, options: ["use": .number(1), "algorithm": .string(sign)],
                                        secrets: [input]), .param)
        try expect("useKey unknown use", Request(.useKey, query: key, options: ["use": "export", "algorithm": .string(sign)],
                                       secrets: [input]), .param)
        try expect("useKey without algorithm", Request(.useKey, query: key, options: ["use": "sign"], secrets: [input]), .param)
        try expect("useKey algorithm as data", Request(.useKey, query: key, options: ["use": "sign", "algorithm": .data([1])],
                                             secrets: [input]), .param)
        try expect("useKey unknown algorithm", Request(.useKey, query: key, options: ["use": "sign", "algorithm": "algid:sign:nonsense"],
                                             secrets: [input]), .unimplemented)
        try expect("useKey exchange without peer", Request(.useKey, query: key, options: ["use": "keyExchange", "algorithm": "algid:keyexchange:ECDH"],
                                                 secrets: [input]), .param)
        try expect("useKey size as a string", Request(.useKey, query: key, options: ["use": "keyExchange", "algorithm": "algid:keyexchange:ECDH",
                                                                            "peer": .data([4]), "requestedSize": "32"], secrets: [input]), .param)
        try expect("useKey not a key's reference", Request(.useKey, query: ["v_PersistentRef": .data(Array("genp".utf8) + ref.dropFirst(4))],
                                                 options: ["use": "sign", "algorithm": .string(sign)], secrets: [input]), .param)
        try expect("unlock by nobody", Request(.unlock), .param)
        try expect("unlock by another", Request(.unlock, options: ["by": "a-friend"]), .param)
        try expect("unlock by a number", Request(.unlock, options: ["by": .number(1)]), .param)
        try expect("settings timeout a string", Request(.setSettings, options: ["lock-timeout": "5"]), .param)
        try expect("settings relative program", Request(.setSettings, options: ["approval-program": "bin/true"]), .param)
        try expect("settings program a number", Request(.setSettings, options: ["approval-program": .number(1)]), .param)
        try expect("passphrase unknown kdf", Request(.changePassphrase, options: ["kdf": "fast"], secrets: [try secret("o"), try secret("n")]), .param)
        try expect("passphrase kdf a number", Request(.changePassphrase, options: ["kdf": .number(1)], secrets: [try secret("o"), try secret("n")]), .param)
        try expect("audit since a string", Request(.audit, options: ["since": "yesterday"]), .param)
        try expect("audit unknown event", Request(.audit, options: ["events": "nosuch"]), .param)
        try expect("audit verify a string", Request(.audit, options: ["verify": "yes"]), .param)
        try expect("audit bad reference", Request(.audit, options: ["item-ref": "zz"]), .param)
        try expect("sync without verb", Request(.sync), .param)
        try expect("sync unknown verb", Request(.sync, options: ["verb": "dance"]), .param)
        try expect("sync verb a number", Request(.sync, options: ["verb": .number(1)]), .param)
        try expect("sync init without server", Request(.sync, options: ["verb": "init", "name": "a"]), .param)
        try expect("sync join server as data", Request(.sync, options: ["verb": "join", "server": .data([1])]), .param)
        try expect("sync remove without host", Request(.sync, options: ["verb": "remove", "host": ""]), .param)
        try expect("sync set without retention", Request(.sync, options: ["verb": "set"]), .param)
        try expect("sync set retention 0", Request(.sync, options: ["verb": "set", "retention-days": .number(0)]), .param)
        try expect("sync set retention past 100 years", Request(.sync, options: ["verb": "set", "retention-days": .number(36_501)]), .param)
        try expect("sync set retention a string", Request(.sync, options: ["verb": "set", "retention-days": "30"]), .param)
        try expect("sync set without a setting", Request(.sync, options: ["verb": "set"]), .param)
        try expect("sync set poll past an hour", Request(.sync, options: ["verb": "set", "poll-ms": .number(3_600_001)]), .param)
        try expect("sync set poll under 0.1 s", Request(.sync, options: ["verb": "set", "poll-ms": .number(99)]), .param)
        try expect("sync set poll negative", Request(.sync, options: ["verb": "set", "poll-ms": .number(-1)]), .param)
        try expect("sync set outside a circle", Request(.sync, options: ["verb": "set", "retention-days": .number(30)]), .param)
        try expect("sync restore without id", Request(.sync, options: ["verb": "restore"]), .param)
        try expect("sync restore unknown id", Request(.sync, options: ["verb": "restore", "history-id": .number(7)]), .itemNotFound)
        try expect("mount without mountpoint", Request(.mount), .param)
        try expect("unmount mountpoint a number", Request(.unmount, options: ["mountpoint": .number(1)]), .param)
        try expect("mount options as data", Request(.mount, options: ["mountpoint": .string(d.dir), "options": .data([1])]), .param)
        try expect("watch account a number", Request(.watch, options: ["account": .number(1)]), .param)
        try expect("export without passphrase", Request(.export), .param)
        try expect("export piece without offset", Request(.export, options: ["transfer": .number(1)]), .param)
        try expect("export unknown kdf", Request(.export, options: ["kdf": "fast"], secrets: [try secret("bp")]), .param)
        try expect("export transfer a string", Request(.export, options: ["transfer": "1", "offset": .number(0)]), .param)
        try expect("import without data", Request(.import, options: ["size": .number(4)]), .param)
        try expect("import data a string", Request(.import, options: ["data": "abcd", "size": .number(4)]), .param)
        try expect("import unknown policy", Request(.import, options: ["data": .data([1]), "size": .number(1), "policy": "newest"]), .param)
        try expect("import unknown groups", Request(.import, options: ["data": .data([1]), "size": .number(1), "groups": "all"]), .param)
        try expect("import last piece without passphrase", Request(.import, options: ["data": .data([1]), "size": .number(1)]), .param)
        try expect("group without name", Request(.groupAdd, options: ["mode": .number(0o440)]), .param)
        try expect("group name a number", Request(.groupSet, options: ["name": .number(1)]), .param)
        try expect("group mode a string", Request(.groupAdd, options: ["name": "g", "mode": "440"]), .param)
        try expect("group lock grant 2", Request(.groupAdd, options: ["name": "g", "lock": .number(2)]), .param)
        try expect("group exe as data", Request(.groupAdd, options: ["name": "g", "exe": .data([1])]), .param)
        try expect("group remove unknown", Request(.groupRemove, options: ["name": "g"]), .itemNotFound)
        XCTAssertEqual(try d.call(Request(.info)).info["lock-timeout"], .number(0), "no refused setting was stored")
        XCTAssertNil(try d.daemon.vault.setting("approval-program"))
        XCTAssertEqual(try d.call(Request(.setSettings, options: ["lock-timeout": "5"]), as: InProcessDaemon.outsider).status,
                       .authFailed, "the right is checked before the options")
        XCTAssertEqual(try d.call(Request(.ping)).status, .success, "still serving")
    }

    private func expect(_ name: String, _ request: Request, _ status: KeychainStatus) throws {
        XCTAssertEqual(try d.call(request).status, status, name)
    }
}
