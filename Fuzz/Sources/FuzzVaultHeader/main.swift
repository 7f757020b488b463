import FuzzSupport
import KeychainCore

// The vault header blob, as read from the `meta` table before anything is decrypted. Parsing
// may only fail with VaultHeader.ParseError; a header that parses is canonical: it encodes back
// to exactly the input bytes, which parse to an equal header.
runFuzzer { bytes in
    let header: VaultHeader
    do {
        header = try VaultHeader.parse(bytes)
    } catch is VaultHeader.ParseError {
        return
    } catch {
        require(false, "VaultHeader.parse threw \(type(of: error))")
        return
    }
    let encoded = header.encoded()
    require(encoded == bytes, "parsed header does not encode back to its bytes")
    require((try? VaultHeader.parse(encoded)) == header, "re-encoded header parses differently")
}
