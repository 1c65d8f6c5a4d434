// Built two ways:
// - plain `swift build`: an executable that replays the files (or directories of files)
//   named on its command line through the target: a corpus, or a crash input kept as a
//   regression;
// - `Tests/Fuzz/run.sh`: `-sanitize=fuzzer -parse-as-library -DFUZZING`, where libFuzzer
//   provides `main` and calls LLVMFuzzerTestOneInput.
// No main.swift: top-level code cannot even be parsed under -parse-as-library, so the
// replayer is an @main type, compiled only without FUZZING.
#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    fuzzConfig(UnsafeRawBufferPointer(start: data, count: count))
    return 0
}

/// SwiftPM links an executable target with `main` defined as `fuzz_config_main`, so libFuzzer's
/// own `main` is not used: this is that entry point, and it hands over to libFuzzer's driver.
@_cdecl("fuzz_config_main")
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
        var replayed = 0
        for path in CommandLine.arguments.dropFirst() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                FileHandle.standardError.write(Data("fuzz-config: no such file: \(path)\n".utf8))
                exit(66)
            }
            let files = isDirectory.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                data.withUnsafeBytes { fuzzConfig($0) }
                replayed += 1
            }
        }
        print("fuzz-config: replayed \(replayed) inputs without a crash")
    }
}
#endif
