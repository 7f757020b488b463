// keychainfs-daemon: the `keychainfs` command line with the engine in-process. The thin
// `keychainfs` runs it for `daemon`, `create-keychain`, `mount`, `secret-service` and the mount.fuse3
// form, and for the key and certificate verbs (libcrypto); it runs every other verb as `keychainfs` does.
import KeychainCLI
import KeychainSystem
import KeychainTPM

TPM.quietTSSLog()  // before any thread: setenv is not thread-safe
// The daemon lives long with many threads, and a large listing must give its memory back.
CurrentProcess.keepFreeHeapReturnable()

CurrentProcess.exit(CLI.main(CommandLine.arguments, engine: Engine(verbs: [
    "create-keychain": EngineVerbs.create,
    "daemon": EngineVerbs.daemon,
    "mount": MountVerb.mount,
    "secret-service": SecretServiceVerb.serve,
    "device-key": DeviceKeyVerb.run,
    "delete-keychain": DeleteKeychainVerb.run,
    "find-certificate": { try CertificateVerbs.findCertificate($0, OpenSSLMaterial()) },
    "find-identity": { try CertificateVerbs.findIdentity($0, OpenSSLMaterial()) },
    "delete-certificate": { try CertificateVerbs.deleteCertificate($0, OpenSSLMaterial()) },
    "delete-identity": { try CertificateVerbs.deleteIdentity($0, OpenSSLMaterial()) },
    "import": { try ImportVerbs.run($0, OpenSSLMaterial()) },
    "export": { try ExportVerbs.run($0, OpenSSLMaterial()) },
], mountFuseForm: MountVerb.mountVault)))
