import Foundation
import XCTest

/// Network namespaces for hosts of a sync circle on one machine: a bridge in the root
/// namespace with the server's address, and per host a namespace joined to it by a veth pair,
/// so one host can be cut off (`ip link set ... down`). Names are unique to the run;
/// `remove()` deletes every namespace and link made, whatever state the test left.
package final class TestNetwork {
    package let tag: String
    package let subnet: String
    package var serverAddress: String { subnet + ".1" }
    package var network: String { subnet + ".0/24" }
    package var bridge: String { "kb\(tag)" }
    package private(set) var namespaces: [String] = []
    private var made: [String] = []  // links in the root namespace, bridge last to go

    /// - Throws: `XCTSkip` when namespaces or veth pairs cannot be made here (not root, no `ip`).
    package init(hosts: Int) throws {
        guard getuid() == 0 else { throw XCTSkip("network namespaces need root") }
        guard FileManager.default.isExecutableFile(atPath: Self.ip) else { throw XCTSkip("no \(Self.ip) (iproute2)") }
        tag = String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(6)).lowercased()
        // A /24 of 10.213.0.0/16 that no interface of this machine uses.
        let used = (try? runProgram([Self.ip, "-4", "-o", "addr"]).stdoutText) ?? ""
        let free = (64..<250).shuffled().first { !used.contains("10.213.\($0).") } ?? 64
        subnet = "10.213.\(free)"
        do {
            try ip(["link", "add", bridge, "type", "bridge"], skipping: true)
            made.append(bridge)
            try ip(["addr", "add", serverAddress + "/24", "dev", bridge])
            try ip(["link", "set", bridge, "up"])
            for i in 0..<hosts {
                let ns = "kcfs-\(tag)-\(i)"
                try ip(["netns", "add", ns], skipping: true)
                namespaces.append(ns)
                try ip(["link", "add", outside(i), "type", "veth", "peer", "name", inside(i)])
                made.insert(outside(i), at: 0)
                try ip(["link", "set", outside(i), "master", bridge])
                try ip(["link", "set", outside(i), "up"])
                try ip(["link", "set", inside(i), "netns", ns])
                try ip(["-n", ns, "addr", "add", address(i) + "/24", "dev", inside(i)])
                try ip(["-n", ns, "link", "set", inside(i), "up"])
                try ip(["-n", ns, "link", "set", "lo", "up"])
            }
        } catch {
            remove()
            throw error
        }
    }

    package static let ip = "/usr/sbin/ip"

    package func outside(_ i: Int) -> String { "kv\(tag)\(i)" }
    package func inside(_ i: Int) -> String { "kn\(tag)\(i)" }
    package func address(_ i: Int) -> String { subnet + ".\(10 + i)" }

    /// `ip netns exec NS`: what runs a command (and the daemon it starts) inside host `i`'s namespace.
    package func exec(_ i: Int) -> [String] { [Self.ip, "netns", "exec", namespaces[i]] }

    /// Takes host `i`'s link to the bridge down or up.
    package func setLink(_ i: Int, up: Bool) throws {
        try ip(["link", "set", outside(i), up ? "up" : "down"])
    }

    /// The inode of host `i`'s network namespace, as `/proc/PID/ns/net` of a process in it shows.
    package func namespaceID(_ i: Int) -> String {
        var st = stat()
        guard stat("/run/netns/\(namespaces[i])", &st) == 0 else { return "?" }
        return "net:[\(st.st_ino)]"
    }

    package func remove() {
        for ns in namespaces { _ = try? runProgram([Self.ip, "netns", "del", ns]) }  // takes the veth ends inside
        for link in made { _ = try? runProgram([Self.ip, "link", "del", link]) }
        namespaces = []
        made = []
    }

    private func ip(_ args: [String], skipping: Bool = false) throws {
        let r = try runProgram([Self.ip] + args)
        guard r.status == 0 else {
            if skipping { throw XCTSkip("ip \(args.joined(separator: " ")) fails here: \(r.stderr)") }
            throw MountFailed(description: "ip \(args.joined(separator: " ")): \(r)")
        }
    }
}
