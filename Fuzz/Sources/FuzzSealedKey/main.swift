import FuzzSupport
import KeychainTPM

// The TPM-wrapped blobs keychainfs reads back from disk: the sealed device key file
// (`SealedKey`, docs/tpm.md "The sealed device key file") and a Secure Enclave key's item secret
// (`TokenKey`). Either parse fails only with SealedKey.ParseError; whatever parses is canonical:
// it encodes back to exactly the input, which parses to the same value. No TPM is reached.
runFuzzer { bytes in
    do {
        let sealed = try SealedKey.parse(bytes)
        require(sealed.encoded() == bytes, "a parsed sealed key does not encode back to its bytes")
        require((try? SealedKey.parse(sealed.encoded())) == sealed, "a re-encoded sealed key parses differently")
        require(sealed.pcrs.allSatisfy { (0..<24).contains($0) }, "PCR outside the SHA-256 bank: \(sealed.pcrs)")
        require(SealedKey.looksSealed(bytes), "a parsed sealed key does not start with the magic")
    } catch is SealedKey.ParseError {
    } catch {
        require(false, "SealedKey.parse threw \(type(of: error))")
    }
    do {
        let key = try TokenKey(blob: bytes)
        require(key.blob == bytes, "a parsed token key does not encode back to its blob")
        require(key.publicPoint.count == 65, "a token key's public point is \(key.publicPoint.count) bytes")
    } catch is SealedKey.ParseError {
    } catch {
        require(false, "TokenKey(blob:) threw \(type(of: error))")
    }
}
