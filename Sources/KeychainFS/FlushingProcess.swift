import Glibc

/// Whether the process that sent a FLUSH is exiting because a signal killed it.
///
/// The kernel sends FLUSH for every close(2) of a descriptor, also for those the kernel closes
/// itself while a killed process exits (SIGKILL included), and a writer's buffer must not be
/// stored then: the write did not finish. The request's pid (`fuse_req_ctx`) is still valid at
/// that point, since the exiting process waits for the reply, and `/proc/PID/stat` tells why it
/// exits: field 9 (flags) has PF_EXITING (0x4) once the exit began, and field 52 (exit_code)
/// holds the terminating signal in its low 7 bits (0 after exit(2), whose status is in bits
/// 8-15). The kernel shows exit_code only to readers that may ptrace the process: a writer of
/// another user that a signal killed reads as 0 and is stored, as before.
func diesBySignal(pid: Int32) -> Bool {
    guard pid > 0 else { return false }
    let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var buf = [UInt8](repeating: 0, count: 1024)
    let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard n > 0 else { return false }
    // The command name (field 2) is in parentheses and may hold spaces: count from the last ')'.
    guard let close = buf[0..<n].lastIndex(of: UInt8(ascii: ")")) else { return false }
    let fields = buf[(close + 1)..<n].split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
    // fields[0] is field 3 (state).
    guard fields.count >= 50, let flags = UInt64(fields[6]), let exitCode = Int64(fields[49].trimmingNewline) else { return false }
    let exiting: UInt64 = 0x4  // PF_EXITING
    return flags & exiting != 0 && exitCode & 0x7f != 0
}

private extension String {
    var trimmingNewline: String { hasSuffix("\n") ? String(dropLast()) : self }

    func trimmingCharacters(in set: String) -> String {
        String(drop(while: { set.contains($0) }).reversed().drop(while: { set.contains($0) }).reversed())
    }
}

/// The process (thread group) of the thread `tid` that sent a request: `Tgid:` in
/// `/proc/TID/status`; `tid` itself when it cannot be read (it exited, or another namespace).
func processID(ofThread tid: Int32) -> Int32 {
    guard tid > 0 else { return tid }
    let fd = open("/proc/\(tid)/status", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return tid }
    defer { close(fd) }
    var buf = [UInt8](repeating: 0, count: 512)  // Tgid is the fourth line
    let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard n > 0 else { return tid }
    for line in buf[0..<n].split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("Tgid:".utf8)) {
        return Int32(String(decoding: line.dropFirst(5), as: UTF8.self).trimmingCharacters(in: " \t")) ?? tid
    }
    return tid
}
