/// The fields `keychainfs history` adds to each kept version's attributes on the socket.
extension AttributeKey {
    /// When the version was set aside (a date).
    public static let historyAt = AttributeKey(rawValue: "history-at")
    /// Why (`HistoryReason.name`).
    public static let historyReason = AttributeKey(rawValue: "history-reason")
    /// Its id in the history, what `history --restore` takes (a number).
    public static let historyID = AttributeKey(rawValue: "history-id")
}
