import CSodium

/// One-time libsodium initialisation; every entry point of this module calls it first.
enum Sodium {
    static let ready: Bool = {
        // sodium_init returns 0 on first success and 1 when already initialised.
        precondition(sodium_init() >= 0, "libsodium failed to initialise")
        return true
    }()

    @inline(__always) static func ensure() { _ = ready }
}
