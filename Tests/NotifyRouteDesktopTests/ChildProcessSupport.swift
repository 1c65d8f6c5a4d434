import Foundation
import NotifyRoute
import NotifyRouteDesktop
import Testing

/// Helpers for the body of an exit test (`#expect(processExitsWith:)`), which runs in
/// a fresh child process.
///
/// libnotify binds the whole process to one session bus (its proxy is process-wide,
/// and GLib reads `DBUS_SESSION_BUS_ADDRESS` once). A child per test gives each test
/// its own bus without changing the environment of the test process, which other
/// tests' child processes inherit.
enum Child {
    /// The sink's unavailability reason and how long asking took; records an issue and
    /// gives `nil` when the sink says it is available.
    static func unavailability(of sink: DesktopSink) async -> (reason: String, elapsed: Duration)? {
        var availability = SinkAvailability.available
        let elapsed = await ContinuousClock().measure { availability = await sink.availability() }
        guard case .unavailable(let reason) = availability else {
            Issue.record("expected unavailable, got \(availability)")
            return nil
        }
        return (reason, elapsed)
    }

    /// Points GLib at the test's bus; call first, before any sink connects.
    static func useBus(_ address: String?) {
        if let address {
            setenv("DBUS_SESSION_BUS_ADDRESS", address, 1)
        } else {
            unsetenv("DBUS_SESSION_BUS_ADDRESS")
            unsetenv("XDG_RUNTIME_DIR")
        }
    }

    /// A router with the desktop plugin only, from YAML.
    static func router(_ yaml: String) throws -> NotificationRouter {
        let registry = try SinkRegistry([DesktopSink.plugin])
        let configuration = try RouterConfiguration.load(yaml: yaml, file: "test.yaml", registry: registry)
        return try NotificationRouter(configuration: configuration, registry: registry)
    }

    static let oneRoute = """
        sinks:
          desktop: { kind: desktop, deadline: 1s }
        routes:
          - match: {}
            to: [desktop]
            dedup: { window: 10m }
        """

    /// Runs `body`, or gives up after `limit` with `nil` (a missing signal must fail
    /// the test, not hang it).
    static func within<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async -> T?) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { await body() }
            group.addTask { try? await Task.sleep(for: limit); return nil }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// The files mapped into this process (`/proc/self/maps`), libraries included.
    static func mappedObjects() -> Set<String> {
        let maps = readWhole("/proc/self/maps")
        return Set(maps.split(separator: "\n").compactMap { line in line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(5).first.map(String.init) })
    }

    /// A file read to its end with read(2): /proc files say they are empty, and
    /// Foundation's readers stop at the first page.
    static func readWhole(_ path: String) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return "" }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The names of this process's threads (`/proc/self/task/*/comm`).
    static func threadNames() -> Set<String> {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return Set(tasks.compactMap { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines)
        })
    }

    /// How many threads this process has (`/proc/self/task`).
    static func threadCount() -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).count
    }

    /// A delivery that is expected to fail: what it threw and how long it took.
    static func failedDelivery(_ sink: DesktopSink, _ delivery: SinkDelivery) async throws -> (error: SinkError, elapsed: Duration) {
        var thrown: (any Error)?
        let elapsed = await ContinuousClock().measure {
            do { _ = try await sink.deliver(delivery) } catch { thrown = error }
        }
        return (try #require(thrown as? SinkError), elapsed)
    }

    /// A line the parent reads back from the child's standard output (measured times).
    static func report(_ key: String, _ duration: Duration) {
        FileHandle.standardOutput.write(Data("measure \(key) \(DurationParser.milliseconds(duration))\n".utf8))
    }
}

extension Array where Element == UInt8 {
    /// `measure KEY MS` lines printed by ``Child/report(_:_:)``.
    var measurements: [String: Int] {
        var result: [String: Int] = [:]
        for line in String(decoding: self, as: UTF8.self).split(separator: "\n") where line.hasPrefix("measure ") {
            let parts = line.split(separator: " ")
            if parts.count == 3, let ms = Int(parts[2]) { result[String(parts[1])] = ms }
        }
        return result
    }
}

extension Child {
    /// Runs an exit test's body, recording a thrown error as an issue (forwarded to the
    /// parent with its message) instead of letting it crash the child without one.
    static func reportingErrors(_ body: () async throws -> Void) async {
        do {
            try await body()
        } catch {
            Issue.record(error, "thrown in the child process")
        }
    }
}
