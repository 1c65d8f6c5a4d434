// Built two ways:
// - plain `swift build`: an executable that replays the files named on its command line
//   (a corpus, a crash input kept as a regression) through the target, and says so;
// - `Tests/Fuzz/run.sh`: `-sanitize=fuzzer -parse-as-library -D FUZZING`, where libFuzzer
//   provides `main` and calls LLVMFuzzerTestOneInput below.
#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    fuzzEvent(UnsafeRawBufferPointer(start: data, count: count))
    return 0
}
#else
import Foundation

var replayed = 0
for path in CommandLine.arguments.dropFirst() {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
        FileHandle.standardError.write(Data("fuzz-event: no such file: \(path)\n".utf8))
        exit(66)
    }
    let files = isDirectory.boolValue
        ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
        : [path]
    for file in files {
        guard let data = FileManager.default.contents(atPath: file) else { continue }
        data.withUnsafeBytes { fuzzEvent($0) }
        replayed += 1
    }
}
print("fuzz-event: replayed \(replayed) inputs without a crash")
#endif
