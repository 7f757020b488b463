import Glibc

/// Calls on paths: status, existence, directories, renames, links, canonical forms.
public enum FileSystem {
    /// The status of the file at `path`: stat(2), or lstat(2) when not `followingLinks` (a
    /// symbolic link is then `.symbolicLink` itself).
    public static func status(of path: String, followingLinks: Bool = true) throws(Errno) -> FileStatus {
        var st = stat()
        _ = try systemCall { followingLinks ? stat(path, &st) : lstat(path, &st) }
        return FileStatus(st)
    }

    /// True when `path` names something, following links (access(2), `F_OK`).
    public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// The status of the file system holding `path` (statvfs(2)); only whether it answers is
    /// kept: a FUSE mount whose server died fails with `ENOTCONN`.
    public static func checkFileSystem(at path: String) throws(Errno) {
        var fs = statvfs()
        _ = try systemCall { statvfs(path, &fs) }
    }

    /// Makes a directory (mkdir(2)). - Throws: `.fileExists` when something is there.
    public static func createDirectory(_ path: String, permissions: FilePermissions) throws(Errno) {
        _ = try systemCall { mkdir(path, permissions.rawValue) }
    }

    /// Renames `source` over `destination` in one step (rename(2)).
    public static func rename(_ source: String, to destination: String) throws(Errno) {
        _ = try systemCall { Glibc.rename(source, destination) }
    }

    /// Gives the file at `existing` the further name `newName` (link(2)), which it never
    /// replaces. - Throws: `.fileExists` when `newName` is taken.
    public static func link(_ existing: String, as newName: String) throws(Errno) {
        _ = try systemCall { Glibc.link(existing, newName) }
    }

    /// Removes a file's name (unlink(2)).
    public static func remove(_ path: String) throws(Errno) {
        _ = try systemCall { unlink(path) }
    }

    /// The absolute, symbolic-link-free form of an existing `path` (realpath(3)).
    public static func canonicalPath(_ path: String) throws(Errno) -> String {
        guard let resolved = realpath(path, nil) else { throw Errno.current }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Where the symbolic link at `path` points (readlink(2)).
    public static func destination(ofLink path: String) throws(Errno) -> String {
        var buf = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = try systemCall { readlink(path, &buf, buf.count - 1) }
        return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The names in the directory at `path`, without `.` and `..`, in the directory's order
    /// (opendir(3), readdir(3)).
    public static func entries(of path: String) throws(Errno) -> [String] {
        guard let dir = opendir(path) else { throw Errno.current }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Creates a new file of mode 0600 named `prefix` plus six random characters and opens it
    /// for reading and writing (mkstemp(3)). Returns it and its path.
    public static func makeTemporaryFile(prefix: String) throws(Errno) -> (FileDescriptor, String) {
        var template = Array((prefix + "XXXXXX").utf8CString)
        let fd = try systemCall { template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) } }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (FileDescriptor(rawValue: fd), path)
    }

    /// The contents of the file at `path`, at most `limit` bytes, read to its end.
    public static func contents(of path: String, limit: Int) throws(Errno) -> [UInt8] {
        let fd = try FileDescriptor.open(path, .readOnly)
        return try fd.closeAfter { () throws(Errno) in try fd.readToEnd(limit: limit) }
    }
}

extension FileSystem {
    /// Sets the permission bits of the file at `path` (chmod(2)).
    public static func setPermissions(of path: String, to permissions: FilePermissions) throws(Errno) {
        _ = try systemCall { chmod(path, permissions.rawValue) }
    }
}
