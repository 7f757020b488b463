import Glibc

extension FileSystem {
    /// What access(2) is asked to check (`R_OK`, `W_OK`, `X_OK`).
    public struct Access: OptionSet, Hashable, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        public static let read = Access(rawValue: R_OK)
        public static let write = Access(rawValue: W_OK)
        public static let execute = Access(rawValue: X_OK)
    }

    /// True when the real user may `access` the file at `path`, following links (access(2)).
    public static func isAccessible(_ path: String, for access: Access) -> Bool {
        Glibc.access(path, access.rawValue) == 0
    }
}
