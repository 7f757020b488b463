import Glibc
import KeychainCore

/// One name of a directory listing, kept from `opendir` to `releasedir`, with what READDIRPLUS
/// answers for it, so that `ls -l` needs no lookup per name.
struct Listed {
    /// The escaped file name.
    let name: [UInt8]
    /// The node the name stands for; nil for "." and "..", which carry their inode in `dotIno`.
    let node: Node?
    let dotIno: UInt64
    /// An item's attributes as `stat` shows them; nil for a directory.
    let file: FileFacts?

    static func dot(_ name: String, ino: UInt64) -> Listed {
        Listed(name: Array(name.utf8), node: nil, dotIno: ino, file: nil)
    }
}

/// A directory's listing from opendir to releasedir: "." and "..", then its names.
struct Listing {
    let dots: (Listed, Listed)
    let names: ListedNames

    var count: Int { names.count + 2 }
    subscript(index: Int) -> Listed { index == 0 ? dots.0 : index == 1 ? dots.1 : names[index - 2] }

    /// Past this many names a listing's memory is freed off the request thread, and the heap
    /// given back to the system after it.
    static let large = 4096
}

/// What an item's `stat` is made of: a few numbers and its group, not its attributes.
struct FileFacts {
    let group: String
    let size: Int
    /// Unix seconds: mtime follows the secret, ctime any change, as for an ordinary file.
    let mtime: Int
    let ctime: Int
    /// False for keys and certificates: their PEM files are read-only, and show it.
    var writable = true

    init(_ e: FileEntry) {
        let unix = { (key: AttributeKey) -> Int in
            if case .date(let t)? = e.attributes[key], t.isFinite, abs(t) < 1e15 { return Int(AbsoluteTime.unix(t)) }
            return 0
        }
        group = e.group
        size = PEMFiles.size(e) ?? e.size
        writable = !FileNames.isFlat(e.itemClass)
        ctime = unix(.modificationDate)
        mtime = e.attributes[Vault.secretModified] != nil ? unix(Vault.secretModified) : ctime
    }
}

extension FileFacts {
    /// A file not stored yet (a create before its first close), in `group`, made at Unix `time`.
    init(group: String, size: Int, time: Int) {
        self.init(group: group, size: size, mtime: time, ctime: time, writable: true)
    }

    init(group: String, size: Int, mtime: Int, ctime: Int, writable: Bool) {
        self.group = group
        self.size = size
        self.mtime = mtime
        self.ctime = ctime
        self.writable = writable
    }
}
