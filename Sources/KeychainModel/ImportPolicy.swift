/// What an import does with an item whose primary key is already in the vault.
public enum ImportPolicy: String, Sendable {
    /// The item with the later modification date (`mdat`) stays; on a tie the vault's stays.
    case keepNewer = "keep-newer"
    /// The backup's item always replaces the vault's.
    case replace
}
