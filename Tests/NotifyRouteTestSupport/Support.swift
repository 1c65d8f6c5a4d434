import Foundation
import NotifyRoute

/// What the tests need from the machine, and how they fail when it is missing: under
/// `CI=true` (or inside Tests/with-components.sh) a missing component is a failure,
/// never a silent skip.
public enum TestEnvironment {
    public static var isCI: Bool {
        ProcessInfo.processInfo.environment["CI"] == "true"
    }

    /// Set by Tests/with-components.sh.
    public static var componentsStarted: Bool {
        ProcessInfo.processInfo.environment["NOTIFY_ROUTE_TEST_COMPONENTS"] == "1"
    }

    /// True when tests that need real components must run (and so must fail if one is missing).
    public static var componentsRequired: Bool { isCI || componentsStarted }

    /// The directory holding the built products (`.build/debug`), found from the test bundle's path.
    public static var productsDirectory: URL {
        let arguments = CommandLine.arguments
        var url = URL(fileURLWithPath: arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        // swift-testing's runner may be the .xctest bundle itself, or a file inside it.
        while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent("notify-route").path) {
            url = url.deletingLastPathComponent()
        }
        return url
    }

    /// The built `notify-route` executable.
    public static var notifyRouteBinary: URL {
        productsDirectory.appendingPathComponent("notify-route")
    }

    /// A fresh temporary directory, removed by the caller when it is done.
    public static func temporaryDirectory(_ name: String = "notify-route-test") throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// The result of running a process to completion.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var standardOutput: String
    public var standardError: String
    public var duration: Duration
    /// True when it was killed for running past its time limit.
    public var timedOut: Bool
}

/// Runs executables (never through a shell) with a time limit.
public enum ProcessRunner {
    public static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, input: String? = nil,
        timeLimit: Duration = .seconds(30), discardOutput: Bool = false
    ) throws -> ProcessResult {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        if let environment { env.merge(environment) { _, new in new } }
        // Tests must never read the developer's own config.
        if env["NOTIFY_ROUTE_CONFIG"] == nil { env["XDG_CONFIG_HOME"] = env["XDG_CONFIG_HOME"] ?? "/nonexistent-notify-route-test" }
        process.environment = env
        let outPipe = Pipe(), errPipe = Pipe(), inPipe = Pipe()
        // A daemon the child starts (tmux's server) would hold captured pipes open forever.
        process.standardOutput = discardOutput ? FileHandle.nullDevice : outPipe
        process.standardError = discardOutput ? FileHandle.nullDevice : errPipe
        process.standardInput = inPipe
        let started = ContinuousClock.now
        try process.run()
        if let input { inPipe.fileHandleForWriting.write(Data(input.utf8)) }
        try? inPipe.fileHandleForWriting.close()

        // Read both pipes concurrently so a chatty child never blocks on a full pipe.
        let outData = LockedData(), errData = LockedData()
        let group = DispatchGroup()
        for (handle, sink) in discardOutput ? [] : [(outPipe.fileHandleForReading, outData), (errPipe.fileHandleForReading, errData)] {
            group.enter()
            DispatchQueue.global().async {
                sink.set(handle.readDataToEndOfFile())
                group.leave()
            }
        }
        var timedOut = false
        let deadline = DispatchTime.now() + .milliseconds(Int(timeLimit.components.seconds) * 1000 + Int(timeLimit.components.attoseconds / 1_000_000_000_000_000))
        while process.isRunning {
            if DispatchTime.now() > deadline {
                timedOut = true
                kill(process.processIdentifier, SIGKILL)
                break
            }
            usleep(2_000)
        }
        process.waitUntilExit()
        group.wait()
        return ProcessResult(
            status: process.terminationStatus, standardOutput: String(decoding: outData.get(), as: UTF8.self),
            standardError: String(decoding: errData.get(), as: UTF8.self), duration: ContinuousClock.now - started,
            timedOut: timedOut)
    }

    /// Runs the built `notify-route` with `arguments`.
    public static func notifyRoute(
        _ arguments: [String], environment: [String: String]? = nil, input: String? = nil, timeLimit: Duration = .seconds(30)
    ) throws -> ProcessResult {
        try run(TestEnvironment.notifyRouteBinary, arguments, environment: environment, input: input, timeLimit: timeLimit)
    }

    /// Finds an executable on PATH.
    public static func which(_ name: String) -> URL? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let url = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }
}

final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ value: Data) { lock.lock(); data = value; lock.unlock() }
    func get() -> Data { lock.lock(); defer { lock.unlock() }; return data }
}
