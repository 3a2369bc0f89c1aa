#if canImport(Glibc)
import Glibc
#endif

/// The one input the target under way was given; libFuzzer calls back through a C function
/// pointer, which cannot capture the target's closure.
nonisolated(unsafe) private var target: (UnsafeRawBufferPointer) -> Void = { _ in }

/// The `main` of every fuzz target. Built by `make fuzz` (-DFUZZING, linked with libFuzzer's
/// no-main runtime) it hands the command line to libFuzzer. A plain `swift build`, which builds
/// every product, has no libFuzzer: then the target runs once on each file named on the command
/// line, so the product links and a crashing input replays without the sanitizer build.
///
/// libFuzzer's own `main` is not used because SwiftPM links an executable's `main` to the module's
/// entry point, which a target without one would leave undefined.
public func fuzzMain(_ body: @escaping (UnsafeRawBufferPointer) -> Void) -> Never {
    target = body
    #if FUZZING
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv) { data, count in
        target(UnsafeRawBufferPointer(start: data, count: count))
        return 0
    })
    #else
    for path in CommandLine.arguments.dropFirst() {
        let bytes = readFile(path)
        bytes.withUnsafeBytes { target($0) }
        print("\(path): ok")
    }
    exit(0)
    #endif
}

#if FUZZING
/// libFuzzer's entry point for a program with its own `main` (libclang_rt.fuzzer_no_main).
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt
#endif

private func readFile(_ path: String) -> [UInt8] {
    guard let file = fopen(path, "rb") else { fatalError("cannot open \(path)") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while case let n = fread(&chunk, 1, chunk.count, file), n > 0 { bytes.append(contentsOf: chunk[0..<n]) }
    return bytes
}
