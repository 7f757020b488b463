import FuzzSupport
import KeychainCore

// Both directions of the mount's reversible names, for service (top-level) and account names:
// - every value escapes to a usable name: 1...255 bytes, no `/` or NUL, never `.` or `..`,
//   and at the top level never a leading `.`;
// - a name that is not the hashed long form unescapes to the value it came from;
// - a hashed name is `%H` and 32 upper-case hex digits, and unescape leaves it to lookup (nil);
// - a name that unescapes escapes back to exactly the same bytes.
runFuzzer { bytes in
    for topLevel in [false, true] {
        checkValue(bytes, topLevel: topLevel)
        checkName(bytes, topLevel: topLevel)
    }
}

func checkValue(_ value: [UInt8], topLevel: Bool) {
    let name = FileNames.escape(value, topLevel: topLevel)
    require(!name.isEmpty && name.count <= FileNames.maximumLength, "escaped name length \(name.count)")
    require(!name.contains(UInt8(ascii: "/")) && !name.contains(0), "escaped name holds / or NUL")
    require(name != Array(".".utf8) && name != Array("..".utf8), "escaped name is . or ..")
    if topLevel { require(name.first != UInt8(ascii: "."), "top-level name starts with .") }
    if name.starts(with: Array("%H".utf8)) {
        let hex = Array("0123456789ABCDEF".utf8)
        require(name.count == 34 && name.dropFirst(2).allSatisfy(hex.contains), "malformed hashed name")
        require(FileNames.unescape(name, topLevel: topLevel) == nil, "hashed name unescaped")
        require(FileNames.escape(value, topLevel: topLevel) == name, "hashed name not stable")
    } else {
        require(FileNames.unescape(name, topLevel: topLevel) == value, "unescape(escape(v)) != v")
    }
}

func checkName(_ name: [UInt8], topLevel: Bool) {
    guard let value = FileNames.unescape(name, topLevel: topLevel) else { return }
    require(FileNames.escape(value, topLevel: topLevel) == name, "escape(unescape(n)) != n")
}
