import Foundation
import NotifyRouteTestSupport
import Testing

/// Who may hand events to `notify-route serve`: its own user, and whom `serve.allow`
/// names. Clients of another uid are real processes (`setpriv`), so the kernel's
/// SO_PEERCRED is what the daemon checks. Needs root to become another user; CI runs as root.
@Suite(.serialized, .enabled(if: (PrivateJournal.isAvailable || TestEnvironment.componentsRequired) && TestEnvironment.runsAsRoot,
                             "needs root (to run a client as uid 65534) and the private journald of Tests/with-components.sh"))
struct DaemonPeerTests {
    init() throws {
        try #require(PrivateJournal.missing == nil, "\(PrivateJournal.missing ?? "")")
        try #require(ProcessRunner.which("setpriv") != nil, "setpriv (package util-linux)")
    }

    static func writeConfig(_ url: URL, allow: String?) throws {
        try ("""
            sinks:
              journal: { kind: journal, deadline: 500ms, identifier: daemon-peers }
            fallback: [journal]

            """ + (allow.map { "serve:\n  allow: \($0)\n" } ?? "")).write(to: url, atomically: true, encoding: .utf8)
    }

    /// `send` as another user and group, on the daemon's socket.
    static func sendAs(uid: Int, gid: Int, _ daemon: DaemonProcess, run: String, title: String) async throws -> ProcessResult {
        let setpriv = try #require(ProcessRunner.which("setpriv"))
        let arguments = ["--reuid", String(uid), "--regid", String(gid), "--clear-groups", TestEnvironment.notifyRouteBinary.path,
                         "send", "--json", "--socket", daemon.socketPath, "-f", "\(PrivateJournal.runField)=\(run)", title]
        // A runtime directory of its own, for the local routing a refusal must not fall back to.
        let environment = ["XDG_RUNTIME_DIR": "/nonexistent-runtime", "NOTIFY_ROUTE_CONFIG": "/nonexistent-config.yaml"]
        return try await PrivateJournal.offPool { try ProcessRunner.run(setpriv, arguments, environment: environment) }
    }

    static func mode(_ path: String) -> (mode: mode_t, gid: gid_t) {
        var info = stat()
        stat(path, &info)
        return (info.st_mode & 0o777, info.st_gid)
    }

    @Test func anotherUserIsRefusedUntilServeAllowNamesIt() async throws {
        try await PrivateJournal.withAccess {
            let directory = try TestEnvironment.temporaryDirectory("daemon-peers")
            defer { try? FileManager.default.removeItem(at: directory) }
            let config = directory.appendingPathComponent("config.yaml")
            try Self.writeConfig(config, allow: nil)
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            // A shared place for the socket, as an admin would choose for a system service.
            chmod(daemon.directory.path, 0o711)
            let run = PrivateJournal.newRunID()
            #expect(Self.mode(daemon.socketPath).mode == 0o600, "only the owner by default")

            // The socket's mode keeps another user out: the kernel refuses the connection.
            let refused = try await Self.sendAs(uid: 65534, gid: 65534, daemon, run: run, title: "refused")
            #expect(refused.status == 69, "\(refused.standardError)")
            #expect(refused.standardError.contains("permission denied (the daemon admits its own user only, unless serve.allow"), "\(refused.standardError)")
            #expect(refused.standardError.contains("nothing was sent"))
            #expect(refused.standardOutput.isEmpty)

            try Self.writeConfig(config, allow: "{ uids: [65534] }")
            let reload = try await DaemonTests.run(["reload", "--socket", daemon.socketPath], daemon)
            #expect(reload.status == 0, "\(reload.standardError)")
            #expect(Self.mode(daemon.socketPath).mode == 0o666)
            let allowed = try await Self.sendAs(uid: 65534, gid: 65534, daemon, run: run, title: "allowed by uid")
            #expect(allowed.status == 0, "\(allowed.standardError)")
            #expect(try DaemonTests.json(allowed.standardOutput)["via"] as? String == "daemon")
            // Anyone can connect now; SO_PEERCRED is the gate, and the daemon logs each refusal.
            let stranger = try await Self.sendAs(uid: 65533, gid: 65533, daemon, run: run, title: "stranger")
            #expect(stranger.status == 69, "\(stranger.standardError)")
            #expect(stranger.standardError.contains("refused this client: uid 65533 may not send to this daemon"), "\(stranger.standardError)")
            #expect(daemon.log.contains("refused a connection") && daemon.log.contains("uid=65533") && daemon.log.contains("pid="),
                    "logged with pid and uid: \(daemon.log)")

            // By group: uid 65533 (no such user) in group 65534.
            try Self.writeConfig(config, allow: "{ groups: [65534] }")
            #expect(try await DaemonTests.run(["reload", "--socket", daemon.socketPath], daemon).status == 0)
            #expect(Self.mode(daemon.socketPath) == (0o660, 65534))
            let byGroup = try await Self.sendAs(uid: 65533, gid: 65534, daemon, run: run, title: "allowed by group")
            #expect(byGroup.status == 0, "\(byGroup.standardError)")

            let entries = try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"], count: 2)
            #expect(Set(entries.compactMap { $0["MESSAGE"] }) == ["allowed by uid", "allowed by group"])
            #expect(entries.allSatisfy { $0["_PID"] == String(daemon.pid) })
        }
    }

    /// `notify-route ARGUMENTS` as another user and group (a socket is the caller's to name).
    static func runAs(uid: Int, gid: Int, _ arguments: [String]) async throws -> ProcessResult {
        let setpriv = try #require(ProcessRunner.which("setpriv"))
        let arguments = ["--reuid", String(uid), "--regid", String(gid), "--clear-groups", TestEnvironment.notifyRouteBinary.path] + arguments
        let environment = ["XDG_RUNTIME_DIR": "/nonexistent-runtime", "NOTIFY_ROUTE_CONFIG": "/nonexistent-config.yaml"]
        return try await PrivateJournal.offPool { try ProcessRunner.run(setpriv, arguments, environment: environment) }
    }

    /// Issue 55, item 8: `serve.allow` lets another user hand events in, and no more: the
    /// daemon's status, reload and resume stay its owner's, and so do the notifications the
    /// owner sent (close). The refusal says why, exit 69 as for a refused peer.
    @Test func anAllowedUserMayOnlyHandEventsIn() async throws {
        try await PrivateJournal.withAccess {
            let directory = try TestEnvironment.temporaryDirectory("daemon-peers")
            defer { try? FileManager.default.removeItem(at: directory) }
            let config = directory.appendingPathComponent("config.yaml")
            try Self.writeConfig(config, allow: "{ uids: [65534] }")
            let daemon = try DaemonProcess.start(config: config)
            defer { daemon.stop() }
            chmod(daemon.directory.path, 0o711)
            let run = PrivateJournal.newRunID()

            let sent = try await Self.sendAs(uid: 65534, gid: 65534, daemon, run: run, title: "handed in")
            #expect(sent.status == 0, "\(sent.standardError)")
            #expect(try DaemonTests.json(sent.standardOutput)["via"] as? String == "daemon")

            for command in ["status", "reload", "resume"] {
                let refused = try await Self.runAs(uid: 65534, gid: 65534, [command, "--socket", daemon.socketPath])
                #expect(refused.status == 69, "\(command): \(refused.status) \(refused.standardOutput) \(refused.standardError)")
                #expect(refused.standardError.contains("uid 65534 may only hand events to this daemon; \(command) is its owner's (uid \(getuid()))"),
                        "\(command): \(refused.standardError)")
                #expect(refused.standardOutput.isEmpty, "\(command): nothing of the daemon's shown: \(refused.standardOutput)")
            }
            #expect(daemon.log.contains("refused a request") && daemon.log.contains("uid=65534"), "logged: \(daemon.log)")

            // The owner's notification stays the owner's; what the other user sent is its own to close.
            let owners = try await DaemonTests.run(["send", "-r", "owners-key", "--socket", daemon.socketPath, "owner's"], daemon)
            #expect(owners.status == 0, "\(owners.standardError)")
            let theirs = try await Self.runAs(uid: 65534, gid: 65534, ["send", "-r", "their-key", "--socket", daemon.socketPath, "theirs"])
            #expect(theirs.status == 0, "\(theirs.standardError)")
            let closeOwners = try await Self.runAs(uid: 65534, gid: 65534, ["close", "-r", "owners-key", "--socket", daemon.socketPath])
            #expect(closeOwners.status == 69, "\(closeOwners.standardError)")
            #expect(closeOwners.standardError.contains("uid 65534 may close only what it sent itself"), "\(closeOwners.standardError)")
            let closeTheirs = try await Self.runAs(uid: 65534, gid: 65534, ["close", "-r", "their-key", "--socket", daemon.socketPath])
            #expect(closeTheirs.status != 69 && !closeTheirs.standardError.contains("may close only"), "\(closeTheirs.standardError)")
            // The owner's key, sent by the other user, is the other user's own: it replaces nothing of the owner's.
            let same = try await Self.runAs(uid: 65534, gid: 65534, ["send", "--json", "-r", "owners-key", "--socket", daemon.socketPath, "not the owner's"])
            #expect(same.status == 0, "\(same.standardError)")
            let sameReport = try DaemonTests.json(same.standardOutput)
            #expect(sameReport["via"] as? String == "daemon")
            #expect((sameReport["event"] as? [String: Any])?["replace_key"] as? String == "uid 65534/owners-key", "\(same.standardOutput)")

            // The owner keeps all of it.
            #expect(try await DaemonTests.run(["status", "--socket", daemon.socketPath], daemon).status == 0)
            #expect(try await DaemonTests.run(["reload", "--socket", daemon.socketPath], daemon).status == 0)
        }
    }

    /// Issue 55, item 8: a client checks whom it hands an event to. Another user's daemon on
    /// a socket in a directory anyone can write (as /tmp), even one whose serve.allow lets
    /// every client in, gets nothing: the event is routed here, and the client says why.
    @Test func aDaemonOfAnotherUserInAWorldWritableDirectoryGetsNoEvent() async throws {
        try await PrivateJournal.withAccess {
            let setpriv = try #require(ProcessRunner.which("setpriv"))
            let shared = try TestEnvironment.temporaryDirectory("nr-shared")
            chmod(shared.path, 0o1777)
            // Readable by the daemon's user; its serve.allow lets root in.
            let configDirectory = try TestEnvironment.temporaryDirectory("daemon-peers")
            defer { try? FileManager.default.removeItem(at: configDirectory) }
            chmod(configDirectory.path, 0o755)
            let config = configDirectory.appendingPathComponent("config.yaml")
            try Self.writeConfig(config, allow: "{ uids: [0] }")
            chmod(config.path, 0o644)
            let socket = shared.appendingPathComponent("socket").path
            let theirs = try DaemonProcess.start(
                config: config, launcher: [setpriv.path, "--reuid=65534", "--regid=65534", "--clear-groups"], socket: socket)
            defer { theirs.stop() }
            let run = PrivateJournal.newRunID()
            let sent = try await PrivateJournal.offPool {
                try ProcessRunner.notifyRoute(
                    ["send", "--json", "--config", config.path, "--socket", socket, "-f", "\(PrivateJournal.runField)=\(run)", "for root only"])
            }
            #expect(sent.status == 0, "\(sent.standardError)")
            #expect(try DaemonTests.json(sent.standardOutput)["via"] as? String == "local", "\(sent.standardOutput)")
            #expect(sent.standardError.contains("\(socket) is served by uid 65534, not by you (uid 0)"), "\(sent.standardError)")
            #expect(sent.standardError.contains("routing here"), "\(sent.standardError)")
            let entry = try #require(try await PrivateJournal.entries(matching: ["\(PrivateJournal.runField)=\(run)"]).first)
            #expect(entry["_UID"] == "0" && entry["_PID"] != String(theirs.pid), "routed by the client itself")
        }
    }

    /// Issue 55, item 8: systemd's socket has the mode of its unit (`SocketMode=`); one that keeps
    /// out whom serve.allow names is said at start, not found out by the first refused client.
    @Test func anInheritedSocketThatKeepsOutTheAllowedPeersIsLogged() async throws {
        let activate = try #require(ProcessRunner.which("systemd-socket-activate"), "systemd-socket-activate (package systemd)")
        let directory = try TestEnvironment.temporaryDirectory("daemon-peers")
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("config.yaml")
        try Self.writeConfig(config, allow: "{ uids: [65534] }")
        let socketPath = directory.appendingPathComponent("activated.socket").path
        let daemon = try DaemonProcess.start(config: config, launcher: [activate.path, "-l", socketPath, "-E", "XDG_RUNTIME_DIR"], waitForSocket: false)
        defer { daemon.stop() }
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: socketPath) { try await Task.sleep(for: .milliseconds(20)) }
        chmod(socketPath, 0o600)
        let connection = try RawDaemonConnection(path: socketPath)
        try connection.write("{\"hello\":\"notify-route\",\"version\":1}\n")
        _ = try #require(try connection.readAnswer(), "the activated daemon answers: \(daemon.log)")
        #expect(daemon.log.contains("the inherited socket \(socketPath) (mode 600) does not let uid 65534 connect"), "\(daemon.log)")
    }
}
