import KeychainClient
import KeychainCrypto
import KeychainModel
import KeychainProtocol
import KeychainSystem

/// `-T APP` of `add-*-password`: macOS lists the applications that may use the item in its
/// access control list; here an item's access is its access group's, so the item goes into the
/// group whose executable list is those programs, made the first time (`trusted-` and a hash
/// of the list). As on macOS the program that adds the item (`keychainfs` itself) is trusted
/// too. `-T ""` (macOS: leave the adding program out) is refused: the daemon lets only an
/// entitled program add to a group; narrow the list afterwards with `group set NAME --exe`.
enum TrustedApplications {
    /// The access group for the `-T` values, made when it does not exist yet (administrators
    /// only: others get the daemon's refusal, exit 51).
    /// - Throws: `UsageError` for a path that is not an executable file, or `-T ""`.
    static func group(for values: [String], client: DaemonClient) throws -> String {
        guard !values.contains("") else {
            throw UsageError("-T \"\" is not offered: only a trusted program may add the item; add it, then narrow its group with keychainfs group set NAME --exe")
        }
        var programs: Set<String> = [Paths.canonical(selfExecutable())]
        for value in values {
            let path = Paths.canonical(value)
            guard let st = try? FileSystem.status(of: path), st.isExecutableFile else {
                throw UsageError("-T takes the path of a program; \(Output.jsonString(value)) is not one")
            }
            programs.insert(path)
        }
        let list = programs.sorted().joined(separator: "\n")  // the group's executables, one a line
        let name = "trusted-" + Hex.encode(KeyedHash.hash(Array(list.utf8), key: nil, length: 16).prefix(6))
        let rows = (try client.send(Request(.groupList)).result.array ?? []).compactMap { $0.item?.attributes.fields }
        if !rows.contains(where: { $0["name"]?.stringValue == name }) {
            try client.send(GroupRequest.add(GroupChange(name: name, executables: programs.sorted())).request)
        }
        return name
    }
}
