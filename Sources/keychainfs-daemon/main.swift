// keychainfs-daemon: the `keychainfs` command line with the engine in-process. The thin
// `keychainfs` runs it for `daemon`, `create-keychain`, `mount`, `secret-service` and the mount.fuse3
// form; it runs every other verb as `keychainfs` does.
import Glibc
import KeychainCLI
import KeychainTPM

TPM.quietTSSLog()  // before any thread: setenv is not thread-safe

exit(CLI.main(CommandLine.arguments, engine: Engine(verbs: [
    "create-keychain": EngineVerbs.create,
    "daemon": EngineVerbs.daemon,
    "mount": MountVerb.mount,
    "secret-service": SecretServiceVerb.serve,
    "device-key": DeviceKeyVerb.run,
], mountFuseForm: MountVerb.mountVault)))
