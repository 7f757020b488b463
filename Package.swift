// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "keychainfs",
    products: [
        .library(name: "KeychainCore", targets: ["KeychainCore"]),
        .library(name: "Security", targets: ["Security"]),
        // `import CommonCrypto` beside `import Security` (docs/commoncrypto.md).
        .library(name: "CommonCrypto", targets: ["CommonCrypto"]),
        .library(name: "KeychainProtocol", targets: ["KeychainProtocol"]),
        .library(name: "KeychainCredentialHelpers", targets: ["KeychainCredentialHelpers"]),
        .library(name: "KeychainTPM", targets: ["KeychainTPM"]),  // for Fuzz/ (FuzzSealedKey)
        .library(name: "KeychainSSHAgent", targets: ["KeychainSSHAgent"]),  // for Fuzz/ (FuzzAgentMessages)
        .executable(name: "keychainfs", targets: ["keychainfs"]),
        .executable(name: "keychainfs-daemon", targets: ["keychainfs-daemon"]),
        .executable(name: "keychainfs-bench", targets: ["keychainfs-bench"]),
        .executable(name: "git-credential-keychainfs", targets: ["git-credential-keychainfs"]),
        .executable(name: "docker-credential-keychainfs", targets: ["docker-credential-keychainfs"]),
    ],
    targets: [
        // C libraries from Debian, reached through pkg-config.
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium",
                       providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CFuse", pkgConfig: "fuse3",
                       providers: [.apt(["libfuse3-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd",
                       providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CTSS2", pkgConfig: "tss2-esys",
                       providers: [.apt(["libtss2-dev"])]),

        // libsodium wrappers: guarded memory, AEAD, Argon2id, keyed BLAKE2b.
        .target(name: "KeychainCrypto", dependencies: ["CSodium", "KeychainSystem"]),
        // Public-key cryptography from OpenSSL 3: EC, RSA and Ed25519 keys, signatures, encryption,
        // ECDH, Apple's encodings. The only importer of COpenSSL.
        .target(name: "KeychainKeys", dependencies: ["COpenSSL", "KeychainCrypto"]),
        // A small SQLite connection wrapper.
        .target(name: "SQLiteStore", dependencies: ["CSQLite"]),
        // The keychain's vocabulary, shared by the engine and its clients without the engine:
        // attribute keys and values, classes, protection classes, statuses, persistent
        // references, change and audit events, the attribute and backup encodings.
        .target(name: "KeychainModel", dependencies: ["KeychainCrypto", "KeychainSystem"]),
        // The vault engine and Apple's item semantics.
        .target(name: "KeychainCore", dependencies: ["KeychainCrypto", "KeychainModel", "KeychainSystem", "SQLiteStore"]),

        // Fleet sync: end-to-end encrypted records through PostgreSQL. The only importer of CPostgres.
        .target(name: "KeychainSync", dependencies: ["CPostgres", "KeychainCore", "KeychainCrypto", "KeychainSystem"]),

        // The TPM 2.0 through the TCG software stack (ESYS): seals the device key. The only importer of CTSS2.
        .target(name: "KeychainTPM", dependencies: ["CTSS2", "KeychainCore", "KeychainCrypto", "KeychainSystem"]),

        // The daemon's socket protocol, framing and paths; shared by the daemon and its clients.
        .target(name: "KeychainProtocol", dependencies: ["KeychainModel", "KeychainCrypto", "KeychainSystem"]),

        // The client side of the socket, for the CLI and the Security module.
        .target(name: "KeychainClient", dependencies: ["KeychainModel", "KeychainCrypto", "KeychainProtocol", "KeychainSystem"]),
        // `import Security`: Apple's SecItem API over the daemon.
        .target(name: "Security", dependencies: ["KeychainModel", "KeychainCrypto", "KeychainKeys", "KeychainProtocol", "KeychainClient"]),
        // `import CommonCrypto`: Apple's digests, HMAC, AES, PBKDF2, key wrap and random calls over
        // KeychainKeys' libcrypto wrappers (no C of its own).
        .target(name: "CommonCrypto", dependencies: ["KeychainKeys"]),
        // The few Linux calls Glibc's module map does not expose (prctl, accept4).
        .target(name: "CProcess"),
        // The errno type and the system-call helpers every target shares: one EINTR loop,
        // whole-buffer reads and writes, waiting for children.
        .target(name: "KeychainSystem", dependencies: ["CProcess"]),
        // The access model, on KeychainModel alone: groups as Unix owner/group/mode, their grants, callers'
        // identities, who is entitled. No I/O: the daemon stores the table, KeychainSystem reads /proc.
        .target(name: "KeychainfsAccess", dependencies: ["KeychainModel"]),
        // The FUSE mount: items as files, served from the daemon; keys and certificates as PEM
        // (KeychainKeys writes it).
        .target(name: "KeychainFS", dependencies: ["CFuse", "CProcess", "KeychainCore", "KeychainCrypto", "KeychainKeys",
                                                   "KeychainfsAccess", "KeychainSystem"]),
        // The daemon: socket server, lock triggers, back-off, mounts, operations with stored keys, fleet sync.
        .target(name: "KeychainDaemon", dependencies: ["KeychainCore", "KeychainCrypto", "KeychainKeys", "KeychainProtocol",
                                                       "KeychainfsAccess", "KeychainFS", "CProcess",
                                                       "KeychainSync", "KeychainSystem", "KeychainTPM"]),

        // The freedesktop Secret Service on D-Bus, a client of the daemon. The only importer of CSystemd.
        .target(name: "KeychainSecretService", dependencies: ["CSystemd", "KeychainModel", "KeychainCrypto", "KeychainKeys",
                                                              "KeychainProtocol", "KeychainClient", "KeychainfsAccess",
                                                              "KeychainSystem"]),

        // OpenSSH's agent protocol: the wire fields, the messages, ECDSA key and signature blobs.
        // No I/O and no engine, so the agent stays a thin client of the daemon.
        .target(name: "KeychainSSHAgent"),

        // `keychainfs ssh-agent`: the agent's socket and sessions, listing and signing through the
        // daemon. A thin client: no engine, no libcrypto (ClientBoundaryTests).
        .target(name: "KeychainAgent", dependencies: ["KeychainSSHAgent", "KeychainModel", "KeychainCrypto", "KeychainProtocol",
                                                      "KeychainClient", "KeychainSystem"]),

        // The command line: verbs, option parsing, passphrase input, output formats. A client of
        // the daemon: it links neither the daemon nor libfuse (docs/cli.md, "The daemon").
        .target(name: "KeychainCLI", dependencies: ["KeychainModel", "KeychainCrypto", "KeychainProtocol", "KeychainClient", "KeychainSystem",
                                                    "KeychainAgent"]),
        .executableTarget(name: "keychainfs", dependencies: ["KeychainCLI", "KeychainSystem"],
                          // The Swift runtime linked in (release builds): a command starts without loading
                          // and binding a dozen shared libraries, a third of a Swift process start here.
                          linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]),
        // The same command line with the engine in-process, for `daemon`, `create-keychain`, `mount`
        // and `secret-service` (sd-bus stays out of the thin client too).
        .executableTarget(name: "keychainfs-daemon", dependencies: ["KeychainCLI", "KeychainClient", "KeychainCore", "KeychainCrypto",
                                                                   "KeychainDaemon", "KeychainfsAccess", "KeychainFS", "KeychainProtocol",
                                                                   "KeychainSecretService", "CProcess", "KeychainTPM", "KeychainKeys",
                                                                   "KeychainSystem"]),
        // git's and docker's credential helpers over internet passwords (docs/credential-helpers.md):
        // thin clients of the daemon, as `keychainfs` (no libfuse, no sd-bus, no OpenSSL).
        .target(name: "KeychainCredentialHelpers", dependencies: ["KeychainModel", "KeychainCrypto", "KeychainProtocol", "KeychainClient",
                                                                  "KeychainSystem"]),
        .executableTarget(name: "git-credential-keychainfs", dependencies: ["KeychainCredentialHelpers", "KeychainSystem"],
                          linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]),
        .executableTarget(name: "docker-credential-keychainfs", dependencies: ["KeychainCredentialHelpers", "KeychainSystem"],
                          linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]),
        .executableTarget(name: "keychainfs-bench", dependencies: ["KeychainCore", "KeychainCrypto", "KeychainClient", "KeychainKeys",
                                                                  "KeychainProtocol", "Security", "KeychainSync", "CommonCrypto"]),

        .testTarget(name: "KeychainCryptoTests", dependencies: ["KeychainCrypto"]),
        .testTarget(name: "KeychainKeysTests", dependencies: ["KeychainKeys", "KeychainCrypto"]),
        .testTarget(name: "CommonCryptoTests", dependencies: ["CommonCrypto"]),
        .testTarget(name: "KeychainSyncTests", dependencies: ["KeychainSync", "KeychainCore", "KeychainCrypto", "KeychainSystem"]),
        .testTarget(name: "SQLiteStoreTests", dependencies: ["SQLiteStore"]),
        .testTarget(name: "KeychainSystemTests", dependencies: ["KeychainSystem"]),
        .testTarget(name: "KeychainCoreTests", dependencies: ["KeychainCore", "KeychainCrypto", "SQLiteStore",
                                                             "KeychainTestSupport"],  // `concurrently`
                    resources: [.copy("Fixtures")]),
        // One unit-test target per library target, on that library alone (no daemon, no mount, no bus).
        .testTarget(name: "KeychainModelTests", dependencies: ["KeychainModel", "KeychainCrypto"]),
        .testTarget(name: "KeychainProtocolTests", dependencies: ["KeychainProtocol", "KeychainModel", "KeychainCrypto"]),
        .testTarget(name: "KeychainClientTests", dependencies: ["KeychainClient", "KeychainProtocol", "KeychainModel",
                                                               "KeychainCrypto"]),
        .testTarget(name: "KeychainSSHAgentTests", dependencies: ["KeychainSSHAgent"]),
        .testTarget(name: "KeychainAgentTests", dependencies: ["KeychainTestSupport", "KeychainAgent", "KeychainCrypto"]),
        .testTarget(name: "KeychainfsAccessTests", dependencies: ["KeychainfsAccess", "KeychainModel"]),
        .testTarget(name: "KeychainFSTests", dependencies: ["KeychainFS", "KeychainCore", "KeychainCrypto", "KeychainfsAccess"]),
        .testTarget(name: "KeychainTPMTests", dependencies: ["KeychainTPM", "KeychainCore"]),
        .testTarget(name: "KeychainSecretServiceTests", dependencies: ["KeychainSecretService", "KeychainCore", "KeychainCrypto",
                                                                      "KeychainKeys"]),
        .testTarget(name: "KeychainCredentialHelpersTests", dependencies: ["KeychainCredentialHelpers", "KeychainModel",
                                                                          "KeychainCrypto"]),
        .testTarget(name: "KeychainDaemonTests", dependencies: ["KeychainDaemon", "KeychainProtocol", "KeychainCore",
                                                               "KeychainCrypto", "KeychainKeys", "KeychainfsAccess", "CProcess",
                                                               "KeychainSystem"]),
        // What the end-to-end targets share: the CLI harness (real daemons in scratch
        // directories), mounts, test users, attackers, PostgreSQL, a private bus, a software TPM.
        .target(name: "KeychainTestSupport", dependencies: ["KeychainCLI", "KeychainCore", "Security", "KeychainTPM"],
                path: "Tests/KeychainTestSupport",
                exclude: ["Attackers"]),  // attacker programs (python3, and hangfs.c built by the test), run by DaemonAttackTests
        // End to end, one target per surface, all on the built binaries and real daemons.
        .testTarget(name: "KeychainCLITests", dependencies: ["KeychainTestSupport", "KeychainCLI", "KeychainCore", "Security"]),
        .testTarget(name: "KeychainMountTests", dependencies: ["KeychainTestSupport", "KeychainCore", "Security"]),
        .testTarget(name: "SecurityTests", dependencies: ["KeychainTestSupport", "KeychainCore", "Security"]),
        .testTarget(name: "KeychainHardeningTests", dependencies: ["KeychainTestSupport", "KeychainCLI", "KeychainCore", "Security",
                                                                  "KeychainTPM"]),
        .testTarget(name: "KeychainServiceTests", dependencies: ["KeychainTestSupport", "KeychainCore", "Security", "KeychainTPM",
                                                                "KeychainSync"]),  // SyncFleetTests drives engines
    ]
)
