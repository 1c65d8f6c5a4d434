#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The end of a pause: what it held is delivered, one by one when few
/// (`history.resume_one_by_one`), else as one summary ("+12 held while paused: backup 9, db 3").
extension NotificationRouter {
    /// Ends the pause (`resume`) and delivers what it held; `nil` without a memory.
    public func resume() async throws -> PauseRelease? {
        guard let memory else { return nil }
        return await deliver(try memory.release(force: true, now: clock.now()))
    }

    /// Delivers what a pause held once its duration has passed: whoever routes next
    /// does it. Costs one `lstat` when nothing is paused (``ControlsMarker``).
    public func releaseEndedPause() async {
        _ = await releaseEndedPauseReadingControls()
    }

    /// ``releaseEndedPause()``, and the silences and pause it read when it delivered nothing,
    /// for the `send` that follows (``send(_:only:controls:)``): the daemon's events then
    /// look at the marker once, not twice (an `lstat` each, on every event under load).
    package nonisolated(nonsending) func releaseEndedPauseReadingControls() async -> Controls? {
        guard let memory else { return Controls.none }
        let controls = memory.controls(at: clock.now())
        guard let pause = controls.pause, !pause.isActive(at: clock.now()) else { return controls }
        if let held = try? memory.release(force: false, now: clock.now()), !held.isEmpty { _ = await deliver(held) }
        return nil
    }

    /// The clock's side of a pause with an end (`pause --for`): what it held is delivered
    /// when it ends, not with the next event; until then, its end is the next due time.
    public func deliverDuePause() async -> DueSummaries {
        var result = DueSummaries(reports: [], nextDue: nil)
        guard let memory, let pause = memory.controls(at: clock.now()).pause else { return result }
        if pause.isActive(at: clock.now()) {
            result.nextDue = pause.until
        } else if let held = try? memory.release(force: false, now: clock.now()), !held.isEmpty {
            result.reports = await deliver(held).reports
        }
        return result
    }

    private func deliver(_ held: [HeldEvent]) async -> PauseRelease {
        var release = PauseRelease(held: held.count)
        guard !held.isEmpty else { return release }
        if held.count <= configuration.history.resumeOneByOne {
            for item in held {
                guard let event = try? NotificationEvent.decode(jsonLine: item.input) else { continue }
                if let report = try? await send(event) { release.reports.append(report) }
            }
        } else if let report = try? await send(PauseRelease.summary(of: held)) {
            release.summarised = true
            release.reports.append(report)
        }
        return release
    }
}

/// What ending a pause delivered.
public struct PauseRelease: Sendable {
    /// How many events the pause held.
    public var held: Int
    /// True when they went out as one summary.
    public var summarised = false
    public var reports: [DeliveryReport] = []

    public init(held: Int, summarised: Bool = false, reports: [DeliveryReport] = []) {
        self.held = held
        self.summarised = summarised
        self.reports = reports
    }

    /// "+12 held while paused: backup 9, db 3", at the highest level held, with the last
    /// titles in the body.
    static func summary(of held: [HeldEvent]) -> NotificationEvent {
        var counts: [String: Int] = [:]
        for item in held { counts[item.source ?? "(no source)", default: 0] += 1 }
        let sources = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        var event = NotificationEvent(title: "+\(held.count) held while paused: \(sources)")
        event.level = held.map(\.level).max() ?? .info
        event.app = "notify-route"
        event.source = "notify-route.pause"
        let titles = held.suffix(10).compactMap { try? NotificationEvent.decode(jsonLine: $0.input).title }
        event.body = titles.joined(separator: "\n") + (held.count > 10 ? "\n…" : "")
        return event
    }
}
