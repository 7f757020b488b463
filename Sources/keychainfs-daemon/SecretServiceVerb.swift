import CProcess
import KeychainCLI
import KeychainCore
import KeychainSecretService

/// The body of `keychainfs secret-service` (declared in KeychainCLI's SecretServiceVerbs):
/// the freedesktop Secret Service on the session bus (docs/secret-service.md).
enum SecretServiceVerb {
    static let serve: VerbBody = { ctx in
        try ctx.checkPositionals()
        // It relays secrets: no core dumps, no ptrace by the same user, as the daemon.
        guard kcfs_harden_process() == 0 else { throw StateError(message: "cannot make the process non-dumpable", status: .internalComponent) }
        let service: SecretService
        do {
            service = try SecretService(connect: { try ctx.client() })
        } catch let e as BusFailure {
            throw StateError(message: "no Secret Service: \(e)", status: .notAvailable)
        }
        try service.run()
        return 0
    }
}
