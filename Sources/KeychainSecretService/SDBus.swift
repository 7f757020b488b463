import CSystemd
import Glibc
import KeychainModel
import KeychainCrypto
import KeychainSystem

// Every call into sd-bus is in this file; the rest of the target sees only these types.

/// A D-Bus error reply: one of the specification's error names and a sentence without secrets.
struct BusError: Error {
    let name: String
    let message: String

    static func unknownObject(_ path: String) -> BusError {
        BusError(name: "org.freedesktop.Secret.Error.NoSuchObject", message: "no such object: \(path)")
    }
    static func notSupported(_ what: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.NotSupported", message: what)
    }
    static func invalidArgs(_ what: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: what)
    }
    static let accessDenied = BusError(name: "org.freedesktop.DBus.Error.AccessDenied",
                                       message: "the caller is not entitled to this access group")
    static let noSession = BusError(name: "org.freedesktop.Secret.Error.NoSession",
                                    message: "no such session, or it belongs to another connection")
    static let isLocked = BusError(name: "org.freedesktop.Secret.Error.IsLocked",
                                   message: "the keychain is locked; unlock it with keychainfs unlock-keychain")
}

/// A failed sd-bus call outside a request (connecting, owning the name): the call and its errno.
public struct BusFailure: Error, CustomStringConvertible {
    public let call: String
    public let code: Int32
    public var description: String { "\(call): \(String(cString: strerror(code)))" }
}

private func type(_ c: Character) -> CChar { CChar(bitPattern: c.asciiValue!) }

/// A connection to the session bus.
final class BusConnection {
    private let bus: OpaquePointer
    private var slots: [OpaquePointer] = []
    private var handler: ((BusMessage) throws -> OutgoingMessage?)?
    private var afterReply: [OutgoingMessage] = []

    /// Opens the session bus as sd_bus_open_user would, but refusing file descriptors.
    /// - Throws: `BusFailure` when there is no address or no bus answers.
    init() throws {
        bus = try Self.openSessionBus()
    }

    /// A started bus client of the session bus: sd_bus_new, sd_bus_set_address (the address of
    /// `sessionBusAddress()`), sd_bus_set_bus_client and sd_bus_set_trusted (what
    /// sd_bus_open_user sets; its `is_local`, which has no setter, only lets
    /// sd_bus_get_name_creds fill gaps from /proc, which this file never asks for),
    /// sd_bus_negotiate_fds off, then sd_bus_start.
    ///
    /// No method of the Secret Service takes a descriptor, and one a caller passes would be
    /// closed by sd-bus on this, the only thread, when its message is freed: a descriptor of a
    /// FUSE file whose FLUSH never answers keeps close() waiting in the kernel for good. With
    /// descriptors not negotiated the bus daemon never routes a message carrying one here; it
    /// answers the sender with NotSupported itself. Negotiation happens during the
    /// authentication sd_bus_start does, so it must be switched off before.
    private static func openSessionBus() throws -> OpaquePointer {
        var created: OpaquePointer?
        let rc = sd_bus_new(&created)
        guard rc >= 0, let b = created else { throw BusFailure(call: "sd_bus_new", code: -rc) }
        func check(_ call: String, _ rc: Int32) throws {
            guard rc >= 0 else {
                sd_bus_unref(b)
                throw BusFailure(call: call, code: -rc)
            }
        }
        guard let address = sessionBusAddress() else {
            sd_bus_unref(b)
            throw BusFailure(call: "no session bus address ($DBUS_SESSION_BUS_ADDRESS and $XDG_RUNTIME_DIR unset)",
                             code: ENOMEDIUM)
        }
        try check("sd_bus_set_address", sd_bus_set_address(b, address))
        try check("sd_bus_set_bus_client", sd_bus_set_bus_client(b, 1))
        try check("sd_bus_set_trusted", sd_bus_set_trusted(b, 1))
        try check("sd_bus_negotiate_fds", sd_bus_negotiate_fds(b, 0))
        try check("sd_bus_start", sd_bus_start(b))
        return b
    }

    /// The session bus's address by sd_bus_open_user's rule (systemd 252 `bus_set_address_user`):
    /// `$DBUS_SESSION_BUS_ADDRESS` (what the bus sets for the services it activates), else
    /// `unix:path=$XDG_RUNTIME_DIR/bus` with every byte other than `[A-Za-z0-9/_.-]` written
    /// `%xx`; nil when neither is set (an empty variable counts as unset).
    static func sessionBusAddress() -> String? {
        if let a = CurrentProcess.environment("DBUS_SESSION_BUS_ADDRESS") { return a }
        guard let dir = CurrentProcess.environment("XDG_RUNTIME_DIR") else { return nil }
        let plain = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ/_-.".utf8)
        var escaped: [UInt8] = []
        for byte in dir.utf8 {
            if plain.contains(byte) {
                escaped.append(byte)
            } else {
                escaped.append(UInt8(ascii: "%"))
                Hex.append(CollectionOfOne(byte), to: &escaped)
            }
        }
        return "unix:path=" + String(decoding: escaped, as: UTF8.self) + "/bus"
    }

    deinit {
        for s in slots { sd_bus_slot_unref(s) }
        sd_bus_flush_close_unref(bus)
    }

    /// Owns `name` (sd_bus_request_name without replacing an owner).
    /// - Throws: `BusFailure` with EEXIST when another connection owns it.
    func requestName(_ name: String) throws {
        let rc = sd_bus_request_name(bus, name, 0)
        guard rc >= 0 else { throw BusFailure(call: "sd_bus_request_name \(name)", code: -rc) }
    }

    /// Routes every method call under `prefix` to `handle` (sd_bus_add_fallback). A nil reply
    /// means "not mine": sd-bus answers UnknownMethod; a thrown `BusError` becomes an error reply.
    func serve(prefix: String, _ handle: @escaping (BusMessage) throws -> OutgoingMessage?) throws {
        handler = handle
        var slot: OpaquePointer?
        let me = Unmanaged.passUnretained(self).toOpaque()
        let rc = sd_bus_add_fallback(bus, &slot, prefix, { m, userdata, _ in
            guard let m, let userdata else { return 0 }
            let connection = Unmanaged<BusConnection>.fromOpaque(userdata).takeUnretainedValue()
            return connection.dispatch(BusMessage(m))
        }, me)
        guard rc >= 0, let slot else { throw BusFailure(call: "sd_bus_add_fallback", code: -rc) }
        slots.append(slot)
    }

    /// Queues a message (a signal) to leave right after the reply of the call being handled.
    func sendAfterReply(_ message: OutgoingMessage) { afterReply.append(message) }

    private func dispatch(_ message: BusMessage) -> Int32 {
        defer {
            for m in afterReply { send(m) }
            afterReply = []
        }
        do {
            guard let reply = try handler?(message) else { return 0 }
            send(reply)
        } catch let e as BusError {
            var error = sd_bus_error()
            sd_bus_error_set(&error, e.name, e.message)
            var m: OpaquePointer?
            if sd_bus_message_new_method_error(message.raw, &m, &error) >= 0, let m { send(OutgoingMessage(m)) }
            sd_bus_error_free(&error)
        } catch {
            var e = sd_bus_error()
            sd_bus_error_set(&e, "org.freedesktop.DBus.Error.Failed", "\(error)")
            var m: OpaquePointer?
            if sd_bus_message_new_method_error(message.raw, &m, &e) >= 0, let m { send(OutgoingMessage(m)) }
            sd_bus_error_free(&e)
        }
        return 1
    }

    /// Queues a message (sd_bus_send); it leaves when the loop runs.
    func send(_ message: OutgoingMessage) {
        _ = sd_bus_send(bus, message.raw, nil)
    }

    /// A new signal from `path` for one connection (sd_bus_message_new_signal with
    /// sd_bus_message_set_destination): the bus delivers it to `destination` alone, never to
    /// other connections' match rules (monitors, which only the bus's own user may become, see
    /// all traffic).
    func signal(path: String, interface: String, member: String, destination: String) throws -> OutgoingMessage {
        var m: OpaquePointer?
        let rc = sd_bus_message_new_signal(bus, &m, path, interface, member)
        guard rc >= 0, let m else { throw BusFailure(call: "sd_bus_message_new_signal", code: -rc) }
        let message = OutgoingMessage(m)
        let set = sd_bus_message_set_destination(m, destination)
        guard set >= 0 else { throw BusFailure(call: "sd_bus_message_set_destination", code: -set) }
        return message
    }

    /// A connection's credentials as the bus daemon took them from the kernel when the
    /// connection was made (`GetConnectionCredentials`: `UnixUserID` from SO_PEERCRED,
    /// `UnixGroupIDs` from SO_PEERGROUPS, `ProcessID`); nil when the bus does not say or the name
    /// is gone. Called directly, not through sd_bus_get_name_creds: sd-bus 252 does not read
    /// `UnixGroupIDs`, and would fill gaps from /proc by a pid that can be reused.
    func credentials(of sender: String) -> BusCredentials? {
        var call: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &call, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                             "org.freedesktop.DBus", "GetConnectionCredentials") >= 0, let call else { return nil }
        defer { sd_bus_message_unref(call) }
        guard sd_bus_message_append_basic(call, type("s"), sender) >= 0 else { return nil }
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        guard sd_bus_call(bus, call, 0, &error, &reply) >= 0, let reply else { return nil }
        defer { sd_bus_message_unref(reply) }
        let m = BusMessage(reply)
        var uid: UInt32?, pid: UInt32?, groups: [UInt32]?
        do {
            guard try m.enter("a", "{sv}") else { return nil }
            while try m.enter("e", "sv") {
                let key = try m.string()
                switch (key, m.peekVariant()) {
                case ("UnixUserID", "u"?): _ = try m.enter("v", "u"); uid = try m.uint32(); try m.exit()
                case ("ProcessID", "u"?): _ = try m.enter("v", "u"); pid = try m.uint32(); try m.exit()
                case ("UnixGroupIDs", "au"?): _ = try m.enter("v", "au"); groups = try m.uint32s(); try m.exit()
                default: try m.skip("v")
                }
                try m.exit()
            }
            try m.exit()
        } catch {
            return nil
        }
        guard let uid, let groups else { return nil }
        return BusCredentials(uid: uid, groups: groups, pid: pid)
    }

    /// Serves until `stop()` is true after a round, or the bus closes (sd_bus_process, sd_bus_wait).
    /// - Throws: `BusFailure` when the connection fails.
    /// Serves until the connection closes or `stop()` is true. When `extra` is readable,
    /// `onExtra` runs on this thread (between calls, never during one).
    func run(until stop: () -> Bool, alsoWatching extra: Int32? = nil, onExtra: () -> Void = {}) throws {
        while !stop() {
            let rc = sd_bus_process(bus, nil)
            if rc < 0 {
                if rc == -ECONNRESET || rc == -ENOTCONN { return }
                throw BusFailure(call: "sd_bus_process", code: -rc)
            }
            if rc > 0 { continue }
            guard let extra else {
                let w = sd_bus_wait(bus, 1_000_000)
                if w < 0 && w != -EINTR { throw BusFailure(call: "sd_bus_wait", code: -w) }
                continue
            }
            let fd = sd_bus_get_fd(bus), events = sd_bus_get_events(bus)
            if fd < 0 || events < 0 { throw BusFailure(call: "sd_bus_get_fd", code: fd < 0 ? -fd : -events) }
            var deadline: UInt64 = 0
            var waitMS: Int32 = 1000
            if sd_bus_get_timeout(bus, &deadline) >= 0 && deadline != UInt64.max {
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let nowUS = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
                waitMS = deadline <= nowUS ? 0 : Int32(min(1000, (deadline - nowUS) / 1000 + 1))
            }
            var set = [pollfd(fd: fd, events: Int16(events), revents: 0), pollfd(fd: extra, events: Int16(POLLIN), revents: 0)]
            let n = poll(&set, 2, waitMS)
            if n < 0 && errno != EINTR { throw BusFailure(call: "poll", code: errno) }
            if n > 0 && set[1].revents != 0 { onExtra() }
        }
        _ = sd_bus_flush(bus)
    }

    /// A method call to the bus itself (for NameOwnerChanged matches and such), answered later.
    func addMatch(_ rule: String, _ handle: @escaping (BusMessage) -> Void) throws {
        final class Box { let f: (BusMessage) -> Void; init(_ f: @escaping (BusMessage) -> Void) { self.f = f } }
        let box = Unmanaged.passRetained(Box(handle)).toOpaque()
        var slot: OpaquePointer?
        let rc = sd_bus_add_match(bus, &slot, rule, { m, userdata, _ in
            guard let m, let userdata else { return 0 }
            Unmanaged<Box>.fromOpaque(userdata).takeUnretainedValue().f(BusMessage(m))
            return 0
        }, box)
        guard rc >= 0, let slot else { throw BusFailure(call: "sd_bus_add_match", code: -rc) }
        slots.append(slot)
    }
}

/// Who a bus connection is, as the bus daemon's kernel credentials say (pinned at its connect).
struct BusCredentials: Equatable {
    var uid: UInt32
    /// The primary and supplementary groups (SO_PEERGROUPS).
    var groups: [UInt32]
    var pid: UInt32?
}

/// A received message, read in order (sd_bus_message_read_*). Valid only inside its handler.
struct BusMessage {
    let raw: OpaquePointer
    init(_ raw: OpaquePointer) { self.raw = raw }

    var path: String { sd_bus_message_get_path(raw).map { String(cString: $0) } ?? "" }
    var interface: String { sd_bus_message_get_interface(raw).map { String(cString: $0) } ?? "" }
    var member: String { sd_bus_message_get_member(raw).map { String(cString: $0) } ?? "" }
    var sender: String { sd_bus_message_get_sender(raw).map { String(cString: $0) } ?? "" }
    var signature: String { sd_bus_message_get_signature(raw, 1).map { String(cString: $0) } ?? "" }

    /// Has the message's memory wiped when it is freed (sd_bus_message_sensitive): it holds a secret.
    func markSensitive() { _ = sd_bus_message_sensitive(raw) }

    /// A new method return for this call (sd_bus_message_new_method_return).
    func reply() throws -> OutgoingMessage {
        var m: OpaquePointer?
        let rc = sd_bus_message_new_method_return(raw, &m)
        guard rc >= 0, let m else { throw BusFailure(call: "sd_bus_message_new_method_return", code: -rc) }
        return OutgoingMessage(m)
    }

    private func check(_ rc: Int32) throws {
        guard rc > 0 else { throw BusError.invalidArgs("the arguments do not match the method's signature") }
    }

    func string() throws -> String {
        var p: UnsafePointer<CChar>?
        try check(sd_bus_message_read_basic(raw, type("s"), &p))
        return p.map { String(cString: $0) } ?? ""
    }

    func objectPath() throws -> String {
        var p: UnsafePointer<CChar>?
        try check(sd_bus_message_read_basic(raw, type("o"), &p))
        return p.map { String(cString: $0) } ?? ""
    }

    func bool() throws -> Bool {
        var b: Int32 = 0
        try check(sd_bus_message_read_basic(raw, type("b"), &b))
        return b != 0
    }

    func uint32() throws -> UInt32 {
        var v: UInt32 = 0
        try check(sd_bus_message_read_basic(raw, type("u"), &v))
        return v
    }

    /// `au`.
    func uint32s() throws -> [UInt32] {
        var p: UnsafeRawPointer?
        var n = 0
        guard sd_bus_message_read_array(raw, type("u"), &p, &n) >= 0 else { throw BusError.invalidArgs("expected an array of uint32") }
        guard let p, n > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: p.assumingMemoryBound(to: UInt32.self), count: n / 4))
    }

    /// An `ay` copied straight into guarded memory.
    func bytes() throws -> SecureBytes {
        var p: UnsafeRawPointer?
        var n = 0
        guard sd_bus_message_read_array(raw, type("y"), &p, &n) >= 0 else { throw BusError.invalidArgs("expected a byte array") }
        return try mapAllocationFailure { try SecureBytes(copying: UnsafeRawBufferPointer(start: p, count: n)) }
    }

    /// Enters a container; false at the end of an enclosing array.
    func enter(_ kind: Character, _ contents: String) throws -> Bool {
        let rc = sd_bus_message_enter_container(raw, type(kind), contents)
        guard rc >= 0 else { throw BusError.invalidArgs("expected \(kind)\(contents)") }
        return rc > 0
    }

    func exit() throws {
        guard sd_bus_message_exit_container(raw) >= 0 else { throw BusError.invalidArgs("malformed container") }
    }

    /// The signature inside the variant that comes next.
    func peekVariant() -> String? {
        var t: CChar = 0
        var contents: UnsafePointer<CChar>?
        guard sd_bus_message_peek_type(raw, &t, &contents) > 0, t == type("v") else { return nil }
        return contents.map { String(cString: $0) }
    }

    func skip(_ signature: String) throws {
        guard sd_bus_message_skip(raw, signature) >= 0 else { throw BusError.invalidArgs("malformed \(signature)") }
    }

    /// `a{ss}`.
    func stringDictionary() throws -> [String: String] {
        var out: [String: String] = [:]
        guard try enter("a", "{ss}") else { return out }
        while try enter("e", "ss") {
            let k = try string()
            out[k] = try string()
            try exit()
        }
        try exit()
        return out
    }

    /// `ao`.
    func objectPaths() throws -> [String] {
        var out: [String] = []
        guard try enter("a", "o") else { return out }
        while true {
            var p: UnsafePointer<CChar>?
            let rc = sd_bus_message_read_basic(raw, type("o"), &p)
            guard rc >= 0 else { throw BusError.invalidArgs("expected object paths") }
            if rc == 0 { break }
            out.append(p.map { String(cString: $0) } ?? "")
        }
        try exit()
        return out
    }
}

/// A message being built (sd_bus_message_append_*); unreferenced when dropped.
final class OutgoingMessage {
    let raw: OpaquePointer
    init(_ raw: OpaquePointer) { self.raw = raw }
    deinit { sd_bus_message_unref(raw) }

    /// Has the message's memory wiped when it is freed (sd_bus_message_sensitive).
    func markSensitive() { _ = sd_bus_message_sensitive(raw) }

    private func check(_ rc: Int32) throws {
        guard rc >= 0 else { throw BusFailure(call: "sd_bus_message_append", code: -rc) }
    }

    func string(_ s: String) throws { try check(sd_bus_message_append_basic(raw, type("s"), s)) }
    func objectPath(_ s: String) throws { try check(sd_bus_message_append_basic(raw, type("o"), s)) }
    func bool(_ b: Bool) throws {
        var v: Int32 = b ? 1 : 0
        try check(sd_bus_message_append_basic(raw, type("b"), &v))
    }
    func uint64(_ n: UInt64) throws {
        var v = n
        try check(sd_bus_message_append_basic(raw, type("t"), &v))
    }
    /// `ay` from bytes the caller keeps (a secret stays in its guarded buffer until copied here).
    func bytes(_ b: UnsafeRawBufferPointer) throws {
        try check(sd_bus_message_append_array(raw, type("y"), b.baseAddress ?? UnsafeRawPointer(bitPattern: 1), b.count))
    }
    func open(_ kind: Character, _ contents: String) throws {
        try check(sd_bus_message_open_container(raw, type(kind), contents))
    }
    func close() throws { try check(sd_bus_message_close_container(raw)) }

    func objectPaths(_ paths: [String]) throws {
        try open("a", "o")
        for p in paths { try objectPath(p) }
        try close()
    }
    func stringDictionary(_ d: [String: String]) throws {
        try open("a", "{ss}")
        for (k, v) in d.sorted(by: { $0.key < $1.key }) {
            try open("e", "ss"); try string(k); try string(v); try close()
        }
        try close()
    }
}
