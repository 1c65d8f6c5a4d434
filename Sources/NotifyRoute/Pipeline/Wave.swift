#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The deliveries of one wave (the routed sinks, or the failover sinks) between the
/// fan-out and the record stage.
struct Wave: Sendable {
    /// One per target, in order; the record stage fills in what the sinks answered.
    var outcomes: [SinkOutcome] = []
    /// The targets the fan-out left to decide and deliver.
    var flows: [SinkFlow] = []
}

/// One sink's delivery as it goes through the policy, deliver and record stages.
struct SinkFlow: Sendable {
    /// Its outcome's position in ``Wave/outcomes``.
    let index: Int
    let target: RouteTarget
    let instance: SinkInstance
    /// Read once per delivery: a sink may compute them.
    let capabilities: SinkCapabilities
    /// The event as this sink gets it (its own layers of the cascade, fitted to it; a
    /// policy may add an action, as ``SnoozeStage`` does).
    var event: ResolvedEvent
    /// The state's key of the dedup window, and of the handle to replace (if any).
    let stateKey: RouterState.Key
    let handleKey: RouterState.Key?
    var decision = PolicyDecision()
    /// A coalesced count update to send later (see ``CountUpdateCoalescer``).
    var flush: CountUpdateCoalescer.Flush?
    var answer = Answer()

    /// Quiet hours' and rate limits' key: per route and sink.
    var policyKey: String { target.label + "\u{1E}" + target.sinkName }

    /// What the sink answered (neither when it was not asked), or, when planning, that
    /// it would be asked.
    struct Answer: Sendable {
        var receipt: SinkReceipt?
        var error: SinkError?
        /// The sink did not take the summary sent before the event: what it held stays held.
        var summaryError: SinkError?
        var planned = false
        var duration = Duration.zero
    }
}

/// What the policy stages read and change for one wave.
struct PolicyContext {
    let now: Date
    let state: any RouterStateTransaction
    let maxEntries: Int
    /// `nil` when planning: a dry run coalesces nothing.
    let countUpdates: CountUpdateCoalescer?
    /// Whether a clock sends what waits for a time (`serve`), or when planning, says
    /// what `serve` would do: grouping needs it.
    var keepsTime = false
    /// The silences and the pause, read once for the wave.
    var controls = Controls.none
}
