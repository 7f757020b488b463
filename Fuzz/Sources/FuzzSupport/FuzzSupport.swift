import CLibFuzzer
import Glibc

/// The input check a target registers; libFuzzer calls it through a C function pointer, which
/// cannot capture, so it is kept here. Set once before the driver starts.
nonisolated(unsafe) private var currentCheck: ([UInt8]) -> Void = { _ in }

/// Hands the process to libFuzzer (`LLVMFuzzerRunDriver`), which parses libFuzzer's flags from
/// the command line and calls `check` with every input. A failed invariant traps inside `check`.
public func runFuzzer(_ check: @escaping ([UInt8]) -> Void) -> Never {
    currentCheck = check
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzerTestOneInput))
}

/// libFuzzer's per-input callback. Also exported under its conventional name, because
/// `-sanitize=fuzzer` links libFuzzer's whole archive, whose unused `main` refers to it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    currentCheck(bytes)
    return 0
}

/// Traps with `message` when an invariant does not hold; libFuzzer saves the input.
public func require(_ condition: Bool, _ message: @autoclosure () -> String,
                    file: StaticString = #fileID, line: UInt = #line) {
    if !condition { fatalError("invariant broken: \(message())", file: file, line: line) }
}
