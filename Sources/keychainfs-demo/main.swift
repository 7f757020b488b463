// keychainfs-demo: creates a vault, stores secrets under several protection classes, locks it
// and shows which secrets remain readable, then checks the file holds no plaintext.
import Glibc
import KeychainCore
import KeychainCrypto

func secret(_ s: String) -> SecureBytes { SecureBytes(copying: Array(s.utf8)) }

func read(_ vault: Vault, _ account: String) -> String {
    do {
        let r = try vault.copyMatching(["class": "genp", "svce": "demo", "acct": .string(account), "r_Data": true],
                                       accessGroups: ["demo"])
        return r.value?.data.map { $0.withUnsafeBytes { "\"" + String(decoding: $0, as: UTF8.self) + "\"" } } ?? "?"
    } catch let status as KeychainStatus {
        return "\(status.message) (\(status.rawValue))"
    } catch {
        return "\(error)"
    }
}

let args = CommandLine.arguments
let dir = args.count > 1 ? args[1] : "/tmp/keychainfs-demo-\(getpid())"
mkdir(dir, 0o700)
let path = dir + "/demo.vault"
unlink(path); unlink(path + "-wal"); unlink(path + "-shm")

do {
    let device = try DeviceKey.loadOrCreate(at: dir + "/device.key")
    print("Creating \(path) (Argon2id, interactive cost)")
    let vault = try Vault.create(at: path, passphrase: secret("demo passphrase"), kdf: .interactive, deviceKey: device)
    let items: [(String, String)] = [("web", "ak"), ("backup", "ck"), ("boot", "dk"), ("hsm", "aku")]
    for (account, protection) in items {
        try vault.add(["class": "genp", "svce": "demo", "acct": .string(account), "pdmn": .string(protection),
                       "labl": .string("demo \(account)")],
                      secret: secret("s3cret-\(account)-value"), accessGroups: ["demo"])
        print("  added demo/\(account) with protection \(protection)")
    }
    print("\nUnlocked:")
    for (account, p) in items { print("  demo/\(account) [\(p)] -> \(read(vault, account))") }
    vault.lock()
    print("\nAfter lock-keychain (state: \(vault.lockState.rawValue)):")
    for (account, p) in items { print("  demo/\(account) [\(p)] -> \(read(vault, account))") }

    print("\nWrong passphrase:")
    do { try vault.unlock(passphrase: secret("guess")) } catch let s as KeychainStatus {
        print("  unlock -> \(s.message) (\(s.rawValue))")
    }
    try vault.unlock(passphrase: secret("demo passphrase"))
    print("Right passphrase: state \(vault.lockState.rawValue); demo/web -> \(read(vault, "web"))")

    // The file, its WAL and SHM must not contain any secret or name in the clear.
    var leaks = 0
    for suffix in ["", "-wal", "-shm"] {
        guard let f = fopen(path + suffix, "rb") else { continue }
        var bytes: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&buf, 1, buf.count, f)
            if n <= 0 { break }
            bytes += buf[0..<n]
        }
        fclose(f)
        for needle in ["s3cret-web-value", "demo web", "backup", "hsm"] {
            let n = Array(needle.utf8)
            if bytes.count >= n.count, (0...(bytes.count - n.count)).contains(where: { bytes[$0..<$0 + n.count].elementsEqual(n) }) {
                print("  LEAK: \(needle) in \(path + suffix)")
                leaks += 1
            }
        }
    }
    print("\nScanned vault, WAL and SHM for secrets and names: \(leaks == 0 ? "none found" : "\(leaks) found")")
    exit(leaks == 0 ? 0 : 1)
} catch {
    print("demo failed: \(error)")
    exit(1)
}
