/// `keychainfs device-key seal|reseal|status`: the device key in a file or sealed by the TPM
/// (docs/tpm.md). The bodies are in keychainfs-daemon, which links the TPM stack.
enum DeviceKeyVerbs {
    static let all: [Verb] = [deviceKey]

    static let deviceKey = Verb(
        name: "device-key", usage: "seal|reseal|status|forget [--tpm-pcrs LIST] [-p PASSPHRASE] [--yes] [--json] [VAULT]",
        summary: "Move the device key into the TPM, re-seal it after an expected PCR change, or show it.",
        valued: ["--tpm-pcrs", "-p"], flags: ["--yes"],
        details: """
        The device key ($KEYCHAINFS_DEVICE_KEY) binds ThisDeviceOnly and Always items to this
        machine. seal replaces the plain key file with the same key sealed by the TPM
        ($KEYCHAINFS_TCTI, else the default TPM), bound to the SHA-256 PCRs in LIST (such as 7
        or 0,2,7) when given; the plain file is replaced only after the sealed key unsealed.
        With PCRs, a recovery copy bound to the TPM alone is sealed too, authorised by VAULT's
        passphrase. reseal seals again to the PCRs' current values (after a firmware update):
        when the key no longer unseals, the passphrase opens the recovery copy. status shows
        where the key is and whether this TPM unseals it. A key the TPM cannot unseal is never
        replaced by a new one: ThisDeviceOnly items do not survive a TPM reset or another machine.
        forget gives up such a key (another TPM, a cleared one, a lost file): the sealed file is
        moved aside, a new plain key is made at the next start, VAULT's other items open with
        the passphrase. It asks first unless --yes is given.
        """
    )  // body: keychainfs-daemon (it links the TPM stack)
}
