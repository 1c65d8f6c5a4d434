import Foundation
import NotifyRoute

/// A small HTTP server of the test's own (Python's `http.server`, in a process of its
/// own): it records every POST it gets (path, headers, JSON body) and answers each with
/// the next status of a script, then 200.
///
/// ```swift
/// let receiver = try HTTPReceiver.start(statuses: [500, 200])
/// defer { receiver.stop() }
/// // ... POST to receiver.url + "/hook"
/// let requests = try receiver.requests()
/// ```
public final class HTTPReceiver {
    public struct Request {
        public var path: String
        /// Header names in lower case.
        public var headers: [String: String]
        public var body: Any?
        public var rawBody: String
    }

    public let directory: URL
    public let url: String
    private var pid: pid_t

    static let script = #"""
        import http.server, json, sys, threading
        log_path, port_path, answers = sys.argv[1], sys.argv[2], [s for s in sys.argv[3].split(",") if s]
        lock = threading.Lock()
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode("utf-8", "replace")
                with lock:
                    answer = answers.pop(0) if answers else "200"
                    status = int(answer.split("+")[0].split(">")[0])
                    with open(log_path, "a") as log:
                        log.write(json.dumps({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                              "body": body, "status": status}) + "\n")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if ">" in answer:
                    self.send_header("Location", answer.split(">", 1)[1])
                if answer.endswith("+huge"):
                    # Two gigabytes, streamed until the client hangs up.
                    self.send_header("Content-Length", str(2 ** 31))
                    self.end_headers()
                    chunk = b"x" * 65536
                    try:
                        for _ in range(2 ** 31 // 65536):
                            self.wfile.write(chunk)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    self.close_connection = True
                    return
                text = b'"scripted answer"'
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)
            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if len(sys.argv) > 4:
            import ssl
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[4], sys.argv[5])
            server.socket = context.wrap_socket(server.socket, server_side=True)
        with open(port_path + ".tmp", "w") as f:
            f.write(str(server.server_address[1]))
        import os; os.rename(port_path + ".tmp", port_path)
        server.serve_forever()
        """#

    /// Starts the receiver; `statuses` answer the first POSTs in order (any path), then 200.
    public static func start(statuses: [Int] = []) throws -> HTTPReceiver {
        try start(answers: statuses.map(String.init))
    }

    /// Starts the receiver; `answers` answer the first POSTs in order, then 200: each a status,
    /// `STATUS+huge` for a body of 2 GiB, or `STATUS>URL` for a `Location` header.
    /// With `selfSignedTLS`, it speaks HTTPS with a certificate of its own that nobody trusts.
    public static func start(answers: [String], selfSignedTLS: Bool = false) throws -> HTTPReceiver {
        let directory = try TestEnvironment.temporaryDirectory("notify-route-receiver")
        var tlsArguments: [String] = []
        if selfSignedTLS {
            let (certificate, key) = (directory.appendingPathComponent("cert.pem").path, directory.appendingPathComponent("key.pem").path)
            guard let openssl = ProcessRunner.which("openssl") else { throw ProcessRunner.SpawnError(description: "openssl not found") }
            let made = try ProcessRunner.run(openssl, [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", certificate,
            ])
            guard made.status == 0 else { throw ProcessRunner.SpawnError(description: "openssl: \(made.standardError)") }
            tlsArguments = [certificate, key]
        }
        let script = directory.appendingPathComponent("receiver.py")
        try Self.script.write(to: script, atomically: true, encoding: .utf8)
        let portFile = directory.appendingPathComponent("port")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let errors = directory.appendingPathComponent("stderr").path
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errors, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        guard let python = ProcessRunner.which("python3") else { throw ProcessRunner.SpawnError(description: "python3 not found") }
        let pid = try ProcessRunner.spawn(
            python.path, [script.path, directory.appendingPathComponent("requests.jsonl").path, portFile.path,
                          answers.joined(separator: ",")] + tlsArguments,
            environment: ProcessInfo.processInfo.environment, actions: &actions)
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: portFile.path) {
            guard ContinuousClock.now < deadline else {
                kill(pid, SIGKILL)
                throw ProcessRunner.SpawnError(description: "the receiver did not start: \((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "")")
            }
            usleep(20_000)
        }
        let port = try String(contentsOf: portFile, encoding: .utf8)
        return HTTPReceiver(directory: directory, url: "\(selfSignedTLS ? "https" : "http")://127.0.0.1:\(port)", pid: pid)
    }

    private init(directory: URL, url: String, pid: pid_t) {
        self.directory = directory
        self.url = url
        self.pid = pid
    }

    deinit { stop() }

    /// Every POST received so far, oldest first; `path` keeps only those to that path.
    public func requests(path: String? = nil) throws -> [Request] {
        let file = directory.appendingPathComponent("requests.jsonl")
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").compactMap { line -> Request? in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let requestPath = object["path"] as? String, path == nil || requestPath == path
            else { return nil }
            let raw = object["body"] as? String ?? ""
            return Request(
                path: requestPath, headers: object["headers"] as? [String: String] ?? [:],
                body: try? JSONSerialization.jsonObject(with: Data(raw.utf8), options: [.fragmentsAllowed]), rawBody: raw)
        }
    }

    /// Waits until `condition` holds for the requests received, or `timeout` passes; returns the last ones read.
    @discardableResult
    public func wait(
        path: String? = nil, timeout: Duration = .seconds(20), until condition: ([Request]) -> Bool
    ) throws -> [Request] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let requests = try requests(path: path)
            if condition(requests) || ContinuousClock.now > deadline { return requests }
            usleep(50_000)
        }
    }

    public func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        pid = 0
    }
}
