import Dispatch
import Glibc
import KeychainCore
import KeychainCrypto
import KeychainSystem

/// Requests on open handles: a directory's listing kept from opendir to releasedir, and a
/// file's descriptor from open to release.
extension MountServer {
    /// Keeps `file` under a new handle; the reply tells the kernel how to cache it.
    func register(_ file: OpenFile, _ opened: OpenInfo) -> OpenInfo {
        var reply = opened
        reply.handle = locked { $0.handle(file, in: \.files) }
        reply.directIO = !options.kernelCache
        reply.keepCache = options.kernelCache
        // A read-only descriptor has nothing to store at close: spare the kernel the FLUSH trip.
        reply.noFlush = !file.isWriting
        return reply
    }

    // MARK: Directories

    /// READDIR, or with `plus` READDIRPLUS: each name with its inode and attributes, which the
    /// kernel then keeps as if it had looked the name up (so each one counts as a lookup).
    func readdir(_ req: any FileRequest, size: Int, offset: Int, handle: UInt64, plus: Bool = false) {
        guard let list = locked({ $0.directories[handle] }) else { return req.error(EBADF) }
        req.directory(offset: offset, size: size, plus: plus, entry: { index in
            guard index < list.count else { return nil }
            let listed = list[index]
            guard let node = listed.node else {
                // The kernel takes no lookup of "." or "..".
                return DirectoryEntry(name: listed.name, ino: listed.dotIno, attr: directoryStat(listed.dotIno))
            }
            if plus {
                let ino = inodes.lookedUp(node)
                return DirectoryEntry(name: listed.name, ino: ino, attr: listed.file.map { fileStat(ino, $0) } ?? directoryStat(ino),
                                      timeout: listed.file == nil ? directoryTimeout : timeout)
            }
            // Only the inode and the type go out. A name the kernel has not looked up carries
            // a placeholder inode; ls ignores it.
            let ino = inodes.existing(node) ?? UInt64.max
            var attr = stat()
            attr.st_ino = __ino_t(ino)
            attr.st_mode = listed.file == nil ? S_IFDIR : S_IFREG
            return DirectoryEntry(name: listed.name, ino: ino, attr: attr)
        }, left: { index, e in
            // Counted above but not sent: the kernel never saw it.
            if plus, list[index].node != nil { inodes.forget(e.ino, 1) }
        })
    }

    func releasedir(_ req: any FileRequest, handle: UInt64) {
        let list = locked { $0.directories.removeValue(forKey: handle) }
        req.ok()
        guard let list, list.count > Listing.large else { return }
        // Tens of thousands of names: freed on another thread, with the pages the scan left in
        // the vault's caches, and then the heap's free pages go back to the system. Later the
        // kernel is asked to drop the names it keeps from the directory (`schedulePrune`).
        let held = Released(list), directory = list.dots.0.dotIno
        DispatchQueue.global(qos: .utility).async { [self, vault] in
            held.drop()
            vault.releaseCaches()
            CurrentProcess.releaseFreeHeap()
            schedulePrune(in: directory)
        }
    }

    // MARK: Files

    func read(_ req: any FileRequest, size: Int, offset: Int, handle: UInt64) {
        guard let file = locked({ $0.files[handle] }) else { return req.error(EBADF) }
        func answer(_ bytes: UnsafeRawBufferPointer) {
            guard offset < bytes.count else { return req.buffer(UnsafeRawBufferPointer(start: nil, count: 0)) }
            let end = min(bytes.count, offset + size)
            req.buffer(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
        }
        // A read-only descriptor answers from its snapshot with no lock held through the reply
        // (its close may arrive while the reply is being written); the reference kept here
        // defers a lock's wipe of the snapshot until the reply is out. A written file's bytes
        // change under writes, so its reads answer under the file's lock.
        let snapshot = file.withContentLock { () -> SecureBytes?? in
            // A descriptor opened before a lock reads nothing after it.
            if file.isRevoked || (file.protection.availability == .whileUnlocked && vault.lockState != .unlocked) {
                req.error(EACCES)
                return nil
            }
            switch file.contents {
            case .reading(let snapshot): return .some(snapshot)
            case .writing:
                file.withContents(answer)
                return nil
            case .revoked, .abandoned, .closed: return .some(nil)
            }
        }
        guard let snapshot else { return }
        if let snapshot { snapshot.withUnsafeBytes(answer) } else { answer(UnsafeRawBufferPointer(start: nil, count: 0)) }
    }

    func write(_ req: any FileRequest, data: UnsafeRawBufferPointer, offset: Int, handle: UInt64) {
        // libfuse keeps its receive buffer for the next request: no plaintext may stay in it,
        // whatever the answer.
        defer { wipeMemory(UnsafeMutableRawBufferPointer(mutating: data)) }
        guard let file = locked({ $0.files[handle] }) else { return req.error(EBADF) }
        noteWriter(file, req)
        let refused = file.withContentLock { () -> Int32? in
            switch file.contents {
            case .revoked: return EACCES
            case .abandoned: return EIO
            case .reading, .closed: return EBADF
            case .writing: break
            }
            guard offset >= 0, data.count <= ItemLimits.maximumSecretLength - offset else { return EFBIG }
            return file.withWrite { w -> Int32? in
                do {
                    guard try file.reserve(offset + data.count, in: &w) else { return ENOSPC }
                } catch {
                    return errnoFor(error)
                }
                w.buffer.withUnsafeMutableBytes { dst in
                    if offset > w.length { (dst.baseAddress! + w.length).initializeMemory(as: UInt8.self, repeating: 0, count: offset - w.length) }
                    if data.count > 0 { (dst.baseAddress! + offset).copyMemory(from: data.baseAddress!, byteCount: data.count) }
                }
                w.length = max(w.length, offset + data.count)
                w.dirty = true
                w.pending = true
                w.writes += 1
                return nil
            } ?? EBADF
        }
        if let refused { return req.error(refused) }
        req.written(data.count)
    }

    /// Records who writes through `file`, so that their FLUSH stores it (`flush`).
    func noteWriter(_ file: OpenFile, _ req: any FileRequest) {
        let tid = req.caller.pid
        guard file.withContentLock({ file.withWrite { !$0.writerThreads.contains(tid) } }) == true else { return }
        let process = processID(ofThread: tid)
        file.withContentLock {
            _ = file.withWrite { w in
                w.writerThreads.insert(tid)
                w.writerProcesses.insert(process)
            }
        }
    }

    /// Stores a written file's bytes as the item's secret in one transaction and reports the
    /// change once. `onlyWritten` (a FLUSH): only when bytes were written through this
    /// descriptor since its last commit, so closing a dup'd descriptor, or an `O_TRUNC` open's
    /// first close before any write, stores nothing; otherwise (the RELEASE) whatever is pending.
    func commit(_ file: OpenFile, onlyWritten: Bool) throws {
        // Locked under this descriptor: the pending bytes are dropped, not stored.
        let pending = try file.withContentLock { () -> (SecureBytes, Int)? in
            if file.isRevoked { throw Denied() }
            guard case .writing(let w) = file.contents, onlyWritten ? w.dirty : w.pending else { return nil }
            return (try file.withContents { try SecureBytes(copying: $0) }, w.writes)
        }
        guard let (secret, writes) = pending else { return }
        defer { secret.wipe() }
        guard case .item(let n) = locked({ _ in file.node }) else { return }
        let change: FileChange
        if let ref = locked({ _ in file.ref }) {
            change = try vault.storeFileSecret(secret, in: ref, accessGroups: file.groups)
        } else {
            change = try vault.storeFileSecret(secret, named: n, accessGroups: file.groups)
            // Later writes go to this item by reference, whatever it is renamed to meanwhile.
            locked { s in
                file.ref = change.entry.ref
                _ = s.emptyServices.remove(Directory(itemClass: n.itemClass, service: n.service))
            }
        }
        file.withContentLock {
            _ = file.withWrite { w in
                guard w.writes == writes else { return }
                w.dirty = false
                w.pending = false
                w.writerThreads.removeAll()
                w.writerProcesses.removeAll()
            }
        }
        changed(change.created ? .add : .update, n, groups: change.groups)
    }

    func flush(_ req: any FileRequest, handle: UInt64) {
        guard let file = locked({ $0.files[handle] }) else { return req.error(EBADF) }
        guard file.withContentLock({ file.isWriting }) else { return req.ok() }
        let pid = req.caller.pid
        // The close that a signal's exit makes: the writer did not finish, nothing is stored.
        if diesBySignal(pid: pid) {
            file.abandon()
            return req.ok()
        }
        // Another process's close (a child closing what it inherited) leaves the bytes pending.
        guard file.withContentLock({ file.withWrite { $0.writerThreads.contains(pid) } ?? false })
                || file.withContentLock({ [p = processID(ofThread: pid)] in file.withWrite { $0.writerProcesses.contains(p) } ?? false })
        else { return req.ok() }
        do {
            // A file created through this mount and not stored yet is stored at its writer's
            // close, written or not: RELEASE comes after close(2) returns, so `touch x` followed
            // by a search must not find the item missing.
            try commit(file, onlyWritten: locked { _ in file.ref != nil })
            req.ok()
        } catch {
            req.error(errnoFor(error))
        }
    }

    func release(_ req: any FileRequest, handle: UInt64) {
        let file = locked { $0.files.removeValue(forKey: handle) }
        if let file {
            try? commit(file, onlyWritten: false)  // what no FLUSH stored (`: > file`); its error has no one to go to
            file.wipe()
        }
        req.ok()
    }
}

/// A value handed to another thread to be freed there.
final class Released<Value>: @unchecked Sendable {
    // Unchecked: set once here, cleared once by the one thread it is handed to.
    private var value: Value?
    init(_ value: Value) { self.value = value }
    func drop() { value = nil }
}

