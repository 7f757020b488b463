import KeychainClient
import KeychainCrypto
import KeychainModel
import KeychainProtocol
import KeychainSystem

/// `keychainfs podman-secret`: the four commands of podman's `shell` secret driver
/// (docs/containers.md), so `podman run --secret NAME` reads a keychain item without a mount.
///
/// Podman runs each command through a shell with its own environment plus `SECRET_ID` (the
/// 25-hex-digit id it gave the secret; podman keeps the name-to-id table itself): `store` gets
/// the secret's bytes on standard input, `lookup` prints them on standard output, `delete`
/// removes them, `list` prints every id, one a line. A secret is the generic password of
/// service `podman-secret` (or `--service`) and account SECRET_ID, labelled "podman secret ID".
enum PodmanSecretVerbs {
    static let all: [Verb] = [podmanSecret]

    /// The service podman's secrets are kept under, unless `--service` names another.
    static let defaultService = "podman-secret"

    static let podmanSecret = Verb(
        name: "podman-secret", usage: "list|lookup|store|delete [--service NAME] [--access-group GROUP] [VAULT]",
        summary: "Serve podman's shell secret driver: podman run --secret NAME reads a keychain item.",
        valued: ["--service", "--access-group"],
        details: """
        For podman secret create --driver shell --driver-opts with list=, lookup=, store= and
        delete= each "keychainfs podman-secret VERB [VAULT]" (see docs/containers.md). Podman gives
        the secret's id in $SECRET_ID. A secret is the generic password of service podman-secret
        (--service NAME for another) and account SECRET_ID, in GROUP with --access-group (else
        your first access group), labelled "podman secret SECRET_ID".
          list    print the account of every such item, one a line (none: nothing, exit 0)
          lookup  print the secret's exact bytes on standard output (none: exit 44)
          store   keep standard input's exact bytes as the secret, replacing one of that id
          delete  delete it (none: exit 44)
        """
    ) { ctx in
        guard let action = ctx.args.positionals.first else { throw UsageError("podman-secret takes list, lookup, store or delete") }
        guard ["list", "lookup", "store", "delete"].contains(action) else {
            throw UsageError("podman-secret takes list, lookup, store or delete, not \(Output.jsonString(action))")
        }
        guard ctx.args.positionals.count <= 2 else { throw UsageError("too many arguments") }
        // The vault is the positional after the action, else $KEYCHAINFS_VAULT, else the default.
        let vaultContext = Context(args: try Arguments(Array(ctx.args.positionals.dropFirst()), valued: [], flags: []))
        let service = ctx.args.value("--service") ?? defaultService
        guard !service.isEmpty else { throw UsageError("--service takes a non-empty name") }
        var query: Attributes = [.class: .string(ItemClass.genericPassword.rawValue), .service: .string(service)]
        if let g = ctx.args.value("--access-group") { query[.accessGroup] = .string(g) }
        let client = try vaultContext.client()

        if action == "list" {
            query[.matchLimit] = .matchLimitAll
            query[.returnAttributes] = .bool(true)
            let found: [FoundItem]
            do { found = try client.send(Request(.copyMatching, query: query)).result.array?.compactMap(\.item) ?? [] }
            catch KeychainStatus.itemNotFound { found = [] }
            let ids = Set(found.compactMap { $0.attributes[.account]?.stringValue }).sorted()
            Terminal.writeString(1, ids.map { $0 + "\n" }.joined())
            return 0
        }

        query[.account] = .string(try secretID())
        switch action {
        case "lookup":
            query[.returnData] = .bool(true)
            query[.returnAttributes] = .bool(true)
            guard let item = try client.send(Request(.copyMatching, query: query)).result.value?.item, let secret = item.secret else {
                throw KeychainStatus.decode
            }
            // Exactly the stored bytes: no newline added, as podman hands them to the container.
            secret.withUnsafeBytes { Terminal.writeAll(1, $0) }
        case "store":
            let secret: SecureBytes
            do {
                secret = try Terminal.readAll(.standardInput, limit: ItemLimits.maximumSecretLength, droppingTrailingNewline: false)
            } catch KeychainStatus.param {
                throw StateError.explained(.param, "the secret on standard input is larger than \(ItemLimits.maximumSecretLength >> 20) MiB, the most an item holds")
            } catch is Errno {
                throw KeychainStatus.io
            }
            var attrs = query
            attrs[.label] = .string("podman secret " + (query[.account]?.stringValue ?? ""))
            do {
                try client.send(Request(.add, query: attrs, secrets: [secret]))
            } catch KeychainStatus.duplicateItem {
                // podman secret create --replace stores again under the same id: the bytes change,
                // in the one group that holds it (an update without a group would change them all).
                var target = query
                if target[.accessGroup] == nil {
                    var probe = query
                    probe[.returnAttributes] = .bool(true)
                    probe[.matchLimit] = .matchLimitAll
                    let found: [ReturnedValue]
                    switch try client.send(Request(.copyMatching, query: probe)).result {
                    case .value(let v): found = [v]
                    case .array(let a): found = a
                    case .none: found = []
                    }
                    let groups = Set(found.compactMap { $0.item?.attributes[.accessGroup]?.stringValue })
                    guard groups.count == 1, let group = groups.first else {
                        throw StateError.explained(.duplicateItem, "secret \(query[.account]?.stringValue ?? "") is stored in several access groups (\(groups.sorted().joined(separator: ", "))): give --access-group")
                    }
                    target[.accessGroup] = .string(group)
                }
                try client.send(Request(.update, query: target, changes: [:], secrets: [secret]))
            }
        default:  // delete
            try client.send(Request(.delete, query: query))
        }
        return 0
    }

    /// `$SECRET_ID`, as podman's shell driver sets it: its id of the secret.
    /// - Throws: `UsageError` when it is unset, or not 1 to 255 printable ASCII bytes without
    ///   spaces (podman's are 25 hex digits).
    static func secretID() throws -> String {
        guard let id = CurrentProcess.environment("SECRET_ID") else {
            throw UsageError("podman-secret lookup, store and delete take the secret's id in $SECRET_ID, as podman's shell driver sets it")
        }
        guard id.utf8.count <= 255, id.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw UsageError("$SECRET_ID is not a podman secret id (1 to 255 printable characters, no spaces)")
        }
        return id
    }
}
