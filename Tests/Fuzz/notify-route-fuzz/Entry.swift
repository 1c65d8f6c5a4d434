// One executable for every fuzz target, built two ways:
// - plain `swift build`: a replayer, `notify-route-fuzz TARGET PATH...`, that runs the files
//   (or directories of files) through the target: a corpus, or a crash input kept as a regression;
// - `Tests/Fuzz/run.sh`: `-sanitize=fuzzer -parse-as-library -DFUZZING`, where libFuzzer's
//   driver calls LLVMFuzzerTestOneInput and NOTIFY_ROUTE_FUZZ_TARGET names the target.
// No main.swift: top-level code cannot even be parsed under -parse-as-library, so the
// replayer is an @main type, compiled only without FUZZING.
#if canImport(Glibc)
import Glibc
#endif

/// The targets, by the name of their corpus folder (`Tests/Fuzz/corpus/NAME`).
let fuzzTargets: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = [
    "fuzz-config": fuzzConfig,
    "fuzz-event": fuzzEvent,
    "fuzz-request": fuzzRequest,
]

#if FUZZING
let selected: @Sendable (UnsafeRawBufferPointer) -> Void = {
    let name = getenv("NOTIFY_ROUTE_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = fuzzTargets[name] else {
        fatalError("NOTIFY_ROUTE_FUZZ_TARGET must name one of: \(fuzzTargets.keys.sorted().joined(separator: ", "))")
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    selected(UnsafeRawBufferPointer(start: data, count: count))
    return 0
}

/// SwiftPM links an executable target with `main` defined as `notify_route_fuzz_main`, so
/// libFuzzer's own `main` is not used: this is that entry point, and it hands over to libFuzzer's driver.
@_cdecl("notify_route_fuzz_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, count in fuzzOneInput(data, count) }
}

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32
#else
import Foundation

@main
enum Replay {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = fuzzTargets[name] else {
            FileHandle.standardError.write(Data("usage: notify-route-fuzz \(fuzzTargets.keys.sorted().joined(separator: "|")) PATH...\n".utf8))
            exit(64)
        }
        var replayed = 0
        for path in arguments.dropFirst() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                FileHandle.standardError.write(Data("notify-route-fuzz: no such file: \(path)\n".utf8))
                exit(66)
            }
            let files = isDirectory.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                data.withUnsafeBytes { target($0) }
                replayed += 1
            }
        }
        print("\(name): replayed \(replayed) inputs without a crash")
    }
}
#endif
