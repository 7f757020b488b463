// swift-tools-version:6.0
// libFuzzer targets for keychainfs's decoders. Kept out of the root package so its build and
// tests are unchanged; scripts/fuzz.sh builds these with `-sanitize=fuzzer,address`.
import PackageDescription

let package = Package(
    name: "keychainfs-fuzz",
    dependencies: [.package(name: "keychainfs", path: "..")],
    targets: [
        // Declares libFuzzer's LLVMFuzzerRunDriver; the library itself comes with -sanitize=fuzzer.
        .systemLibrary(name: "CLibFuzzer"),
        // runFuzzer and require, shared by the targets.
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer"]),
        // Wire bytes -> AttributeCoding -> ParsedQuery (search, update or delete).
        .executableTarget(name: "FuzzQuery", dependencies: ["FuzzSupport",
            .product(name: "KeychainCore", package: "keychainfs"),
        ]),
        // Frames on a socket pair -> Request.decode and Response.decode.
        .executableTarget(name: "FuzzMessages", dependencies: ["FuzzSupport",
            .product(name: "KeychainProtocol", package: "keychainfs"),
            .product(name: "KeychainCore", package: "keychainfs"),
        ]),
        // FileNames.escape / unescape round trips, at the top level and below it.
        .executableTarget(name: "FuzzFileNames", dependencies: ["FuzzSupport",
            .product(name: "KeychainCore", package: "keychainfs"),
        ]),
        // The credential helpers' input: docker's JSON, git's key=value lines, registry URLs.
        .executableTarget(name: "FuzzCredentialInput", dependencies: ["FuzzSupport",
            .product(name: "KeychainCredentialHelpers", package: "keychainfs"),
            .product(name: "KeychainCore", package: "keychainfs"),
        ]),
        // VaultHeader.parse, and encoded() of whatever parses.
        .executableTarget(name: "FuzzVaultHeader", dependencies: ["FuzzSupport",
            .product(name: "KeychainCore", package: "keychainfs"),
        ]),
        // The SSH agent's messages: frames, requests, key blobs and keys to add.
        .executableTarget(name: "FuzzAgentMessages", dependencies: ["FuzzSupport",
            .product(name: "KeychainSSHAgent", package: "keychainfs"),
        ]),
        // SealedKey.parse (the sealed device key file) and TokenKey(blob:), and what they encode.
        .executableTarget(name: "FuzzSealedKey", dependencies: ["FuzzSupport",
            .product(name: "KeychainTPM", package: "keychainfs"),
        ]),
    ]
)
