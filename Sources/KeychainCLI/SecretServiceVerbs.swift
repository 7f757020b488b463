
/// `keychainfs secret-service`: the freedesktop Secret Service on the session bus (docs/secret-service.md).
enum SecretServiceVerbs {
    static let all: [Verb] = [secretService]

    static let secretService = Verb(
        name: "secret-service", usage: "[VAULT]",
        summary: "Serve the vault as org.freedesktop.secrets (the Secret Service) on the session bus.",
        details: """
        Connects to the session bus ($DBUS_SESSION_BUS_ADDRESS), owns org.freedesktop.secrets and
        serves it until the bus goes away. Collections are the caller's access groups (the
        `default` alias is the first); items are generic passwords. Only this user's connections
        are served. The bus starts it by itself with mount-helpers' org.freedesktop.secrets.service.
        Exits 53 when there is no session bus or another program owns the name.
        """
    )  // body: keychainfs-daemon (sd-bus stays out of the thin client)
}
