import Foundation
import NotifyRouteTestSupport
import Testing

/// Every file in BrokenConfigs/ starts with `# expect: LINE:COL: MESSAGE`: the error
/// `notify-route config check` must report for it, with exit 78 (EX_CONFIG).
@Suite struct BrokenConfigTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("BrokenConfigs")

    static var files: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".yaml") }.sorted()) ?? []
    }

    @Test func theCorpusIsLargeEnough() {
        #expect(Self.files.count >= 15)
    }

    @Test(arguments: files)
    func configCheckNamesFileLineColumnAndWhatWasExpected(file: String) throws {
        let url = Self.directory.appendingPathComponent(file)
        let firstLine = try #require(String(decoding: try Data(contentsOf: url), as: UTF8.self).split(separator: "\n").first)
        let expected = try #require(firstLine.split(separator: "# expect: ", maxSplits: 1).last.map(String.init))
        let result = try ProcessRunner.notifyRoute(["config", "check", url.path])
        #expect(result.status == 78, "\(result.standardError)")
        #expect(result.standardError == "notify-route: \(url.path):\(expected)\n")
        #expect(result.standardOutput.isEmpty)
    }

    @Test(arguments: files)
    func sendWithABrokenConfigSendsNothing(file: String) throws {
        let url = Self.directory.appendingPathComponent(file)
        let result = try ProcessRunner.notifyRoute(["send", "--config", url.path, "must not appear"], environment: ["NO_COLOR": "1"])
        #expect(result.status == 78)
        #expect(!result.standardError.contains("must not appear"))
        #expect(!result.standardOutput.contains("must not appear"))
    }
}
