import Foundation
import NotifyRoute

/// A real Prometheus Alertmanager (Debian's `prometheus-alertmanager`, 0.25) started by a
/// test on loopback, alone or as an HA pair, notifying an ``HTTPReceiver`` of the test's
/// own through a webhook receiver that also gets resolved notifications.
///
/// ```swift
/// let receiver = try HTTPReceiver.start()
/// let cluster = try AlertmanagerCluster.start(peers: 2, notifying: receiver)
/// defer { cluster.stop(); receiver.stop() }
/// ```
public final class AlertmanagerCluster {
    public struct Peer {
        public var url: String
        public var pid: pid_t
        public var log: String
        /// How it was started, for ``restart(peer:)``.
        var binary = ""
        var arguments: [String] = []
    }

    public static let binaryName = "prometheus-alertmanager"

    /// Whether the binary is installed; tests are skipped without it unless components are required.
    public static var isAvailable: Bool { ProcessRunner.which(binaryName) != nil }

    public let directory: URL
    public private(set) var peers: [Peer] = []

    /// Starts `peers` instances (1: no cluster; 2: an HA pair gossiping on loopback) and
    /// waits until each answers `/-/ready` and, for a pair, sees the other.
    public static func start(peers count: Int = 1, notifying receiver: HTTPReceiver, groupWait: String = "1s") throws -> AlertmanagerCluster {
        guard let binary = ProcessRunner.which(binaryName) else {
            throw ProcessRunner.SpawnError(description: "\(binaryName) is not installed (apt-get install prometheus-alertmanager; .ci/setup does)")
        }
        let cluster = try AlertmanagerCluster(directory: TestEnvironment.temporaryDirectory("notify-route-am"))
        do {
            try cluster.launch(binary: binary, count: count, receiver: receiver, groupWait: groupWait)
        } catch {
            cluster.stop()
            throw error
        }
        return cluster
    }

    private init(directory: URL) {
        self.directory = directory
    }

    deinit { stop() }

    private func launch(binary: URL, count: Int, receiver: HTTPReceiver, groupWait: String) throws {
        let config = directory.appendingPathComponent("am.yml")
        // Every label set its own group, notified after a short group_wait, resolved ones too.
        try """
            route:
              receiver: test
              group_by: ['...']
              group_wait: \(groupWait)
              group_interval: 2s
              repeat_interval: 1h
            receivers:
              - name: test
                webhook_configs:
                  - url: \(receiver.url)/alertmanager
                    send_resolved: true
            """.write(to: config, atomically: true, encoding: .utf8)
        let webPorts = try (0..<count).map { _ in try FreePort.pick() }
        let clusterPorts = try (0..<count).map { _ in try FreePort.pick() }
        for index in 0..<count {
            let storage = directory.appendingPathComponent("data-\(index)")
            try FileManager.default.createDirectory(at: storage, withIntermediateDirectories: true)
            var arguments = [
                "--config.file=\(config.path)", "--storage.path=\(storage.path)",
                "--web.listen-address=127.0.0.1:\(webPorts[index])", "--log.level=debug",
            ]
            if count == 1 {
                arguments.append("--cluster.listen-address=")
            } else {
                arguments += [
                    "--cluster.listen-address=127.0.0.1:\(clusterPorts[index])",
                    "--cluster.advertise-address=127.0.0.1:\(clusterPorts[index])",
                    "--cluster.peer-timeout=2s", "--cluster.gossip-interval=50ms", "--cluster.pushpull-interval=2s",
                    "--cluster.settle-timeout=5s",
                ]
                for other in 0..<count where other != index { arguments.append("--cluster.peer=127.0.0.1:\(clusterPorts[other])") }
            }
            let log = directory.appendingPathComponent("am-\(index).log").path
            var peer = Peer(url: "http://127.0.0.1:\(webPorts[index])", pid: 0, log: log, binary: binary.path, arguments: arguments)
            peer.pid = try Self.spawn(peer)
            peers.append(peer)
        }
        try waitUntilReady()
        guard count > 1 else { return }
        // A pair dedups only once each peer knows the other.
        let deadline = ContinuousClock.now + .seconds(30)
        for peer in peers {
            while true {
                let status = try HTTPRequest.get(peer.url + "/api/v2/status")
                if let data = status?.body.data(using: .utf8),
                   let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                   let clusterStatus = object["cluster"] as? [String: Any], let members = clusterStatus["peers"] as? [Any],
                   members.count == count, clusterStatus["status"] as? String == "ready" {
                    break
                }
                guard ContinuousClock.now < deadline else {
                    throw ProcessRunner.SpawnError(description: "alertmanager pair did not form within 30s:\n\(Self.read(peer.log))")
                }
                usleep(100_000)
            }
        }
    }

    private static func spawn(_ peer: Peer) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, peer.log, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, peer.log, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        return try ProcessRunner.spawn(peer.binary, peer.arguments, environment: ProcessInfo.processInfo.environment, actions: &actions)
    }

    private func waitUntilReady() throws {
        let deadline = ContinuousClock.now + .seconds(30)
        for peer in peers where peer.pid > 0 {
            while try HTTPRequest.get(peer.url + "/-/ready")?.status != 200 {
                guard ContinuousClock.now < deadline else {
                    throw ProcessRunner.SpawnError(description: "alertmanager \(peer.url) not ready within 30s:\n\(Self.read(peer.log))")
                }
                usleep(50_000)
            }
        }
    }

    /// Starts a peer that ``stop(peer:)`` stopped again, on the same address and storage
    /// (an Alertmanager that was down and comes back), and waits until it is ready.
    public func restart(peer index: Int) throws {
        guard peers[index].pid == 0 else { return }
        peers[index].pid = try Self.spawn(peers[index])
        try waitUntilReady()
    }

    /// The alerts a peer holds (`GET /api/v2/alerts`), as decoded JSON.
    public func alerts(peer: Int = 0, active: Bool? = nil) throws -> [[String: Any]] {
        let query = active.map { "?active=\($0)&silenced=true&inhibited=true&unprocessed=true" } ?? ""
        guard let answer = try HTTPRequest.get(peers[peer].url + "/api/v2/alerts" + query), answer.status == 200,
              let data = answer.body.data(using: .utf8), let alerts = try JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        else { throw ProcessRunner.SpawnError(description: "GET /api/v2/alerts failed") }
        return alerts
    }

    public func stop() {
        for index in peers.indices { stop(peer: index) }
    }

    /// Stops one peer: its address refuses connections until ``restart(peer:)``.
    public func stop(peer index: Int) {
        let peer = peers[index]
        if peer.pid > 0 {
            kill(peer.pid, SIGTERM)
            var status: Int32 = 0
            let deadline = ContinuousClock.now + .seconds(5)
            while waitpid(peer.pid, &status, WNOHANG) == 0 {
                if ContinuousClock.now > deadline {
                    kill(peer.pid, SIGKILL)
                    waitpid(peer.pid, &status, 0)
                    break
                }
                usleep(20_000)
            }
        }
        peers[index].pid = 0
    }

    /// What the peers logged, for a failure message.
    public var logs: String { peers.map { Self.read($0.log) }.joined(separator: "\n---\n") }

    static func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
}

/// A free TCP port on loopback: bound to port 0, read back, closed (the kernel does not
/// hand it out again at once).
public enum FreePort {
    public static func pick() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ProcessRunner.SpawnError(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw ProcessRunner.SpawnError(description: "bind: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// A blocking HTTP GET for tests, through curl (the system's, so the test does not check
/// the product's HTTP client with itself).
public enum HTTPRequest {
    public struct Answer {
        public var status: Int
        public var body: String
    }

    /// `nil` when nothing answered.
    public static func get(_ url: String) throws -> Answer? {
        let result = try ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-m", "5", "-w", "\n%{http_code}", url], timeLimit: .seconds(10))
        guard result.status == 0, let newline = result.standardOutput.lastIndex(of: "\n"),
              let status = Int(result.standardOutput[result.standardOutput.index(after: newline)...])
        else { return nil }
        return Answer(status: status, body: String(result.standardOutput[..<newline]))
    }
}
