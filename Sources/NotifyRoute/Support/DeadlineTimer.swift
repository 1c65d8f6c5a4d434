import Dispatch
import Synchronization

/// Runs short actions at given instants, on one thread of its own: the deadlines of
/// sink calls, which must hold even when the call never returns.
///
/// Dispatch's `asyncAfter` would do, but its first use starts Dispatch's manager thread
/// and a worker thread, each with an 8 MiB stack and a malloc arena of its own, in a
/// process that may live ten milliseconds; this is one thread, started by the first
/// timer, that sleeps until the earliest instant. An action runs on that thread: it must
/// return at once (resume a continuation, mark something forgotten), or it delays every
/// later timer.
///
/// ```swift
/// let reply = await DeadlineTimer.shared.first(by: .now + .seconds(1), orElse: "no answer") { answer in
///     worker.submit { answer(doTheSlowThing()) }
/// }
/// ```
package final class DeadlineTimer: Sendable {
    /// The process's timer thread.
    package static let shared = DeadlineTimer()

    /// A timer that is set, for ``cancel(_:)``.
    package struct Token: Hashable, Sendable {
        fileprivate let instant: ContinuousClock.Instant
        fileprivate let id: UInt64
    }

    private struct Entry {
        let token: Token
        let action: @Sendable () -> Void
    }

    /// What the timer's thread is doing, so that setting a timer wakes it only when it
    /// would otherwise sleep past the new instant.
    private enum Thread {
        case notStarted
        /// Running actions, or about to look at the entries again.
        case awake
        case asleep(until: ContinuousClock.Instant?)
    }

    private struct State {
        /// Ordered by instant, then by the order they were set.
        var entries: [Entry] = []
        var nextID: UInt64 = 0
        var thread = Thread.notStarted
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    private init() {}

    /// Calls `action` on the timer's thread at `instant` (at once when it has passed)
    /// unless ``cancel(_:)`` comes first.
    @discardableResult
    package func schedule(at instant: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> Token {
        let (token, startThread, wakeThread) = state.withLock { state in
            state.nextID += 1
            let token = Token(instant: instant, id: state.nextID)
            let index = Self.insertionIndex(in: state.entries, for: instant)
            state.entries.insert(Entry(token: token, action: action), at: index)
            switch state.thread {
            case .notStarted:
                state.thread = .awake
                return (token, true, false)
            case .awake:
                return (token, false, false)
            case .asleep(let until):
                // A wake-up is a context switch on the caller's path (a send's state batch
                // sets one per event); a thread that wakes by then anyway finds the entry.
                guard until.map({ instant < $0 }) ?? true else { return (token, false, false) }
                state.thread = .awake
                return (token, false, true)
            }
        }
        if startThread {
            // A thread that cannot be made leaves the timers unfired; say so rather than hang silently.
            precondition(DetachedThread.start { self.run() }, "cannot start the deadline timer thread")
        } else if wakeThread {
            wake.signal()
        }
        return token
    }

    /// Unsets a timer; nothing happens if it has fired already.
    package func cancel(_ token: Token) {
        state.withLock { state in
            var index = Self.insertionIndex(in: state.entries, for: token.instant)
            // Entries of the same instant sit just before the insertion point.
            while index > 0 {
                index -= 1
                guard state.entries[index].token.instant == token.instant else { break }
                if state.entries[index].token.id == token.id {
                    state.entries.remove(at: index)
                    return
                }
            }
        }
    }

    /// The answer `start` gives (from any thread, once), or `fallback` when none has
    /// come by `deadline`; then the answer that comes late is dropped.
    ///
    /// The caller's task is suspended, never its thread blocked, and no task is made:
    /// `start` runs at once, on the caller's thread, and must not block.
    package func first<Value: Sendable>(
        by deadline: ContinuousClock.Instant, orElse fallback: @autoclosure @escaping @Sendable () -> Value,
        _ start: (_ answer: @escaping @Sendable (Value) -> Void) -> Void
    ) async -> Value {
        let once = ResumeOnce<Value>()
        return await withCheckedContinuation { continuation in
            once.install(continuation)
            let token = schedule(at: deadline) { once.resume(fallback()) }
            start { value in
                if once.resume(value) { self.cancel(token) }
            }
        }
    }

    /// Where an entry due at `instant` goes: after every entry due at or before it.
    private static func insertionIndex(in entries: [Entry], for instant: ContinuousClock.Instant) -> Int {
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].token.instant <= instant { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private func run() {
        while true {
            let (due, next) = state.withLock { state -> ([Entry], ContinuousClock.Instant?) in
                let count = Self.insertionIndex(in: state.entries, for: .now)
                let due = Array(state.entries.prefix(count))
                state.entries.removeFirst(count)
                let next = state.entries.first?.token.instant
                // Said before the lock is let go: a timer set between here and the wait
                // below signals the semaphore, which the wait then returns for at once.
                state.thread = due.isEmpty ? .asleep(until: next) : .awake
                return (due, next)
            }
            for entry in due { entry.action() }
            guard due.isEmpty else { continue }
            if let next {
                let (seconds, attoseconds) = (next - .now).components
                // At most a day at a time (then it looks again): no overflow for a far instant.
                let nanoseconds = min(max(0, seconds), 86_400) * 1_000_000_000 + max(0, attoseconds / 1_000_000_000) + 1
                _ = wake.wait(timeout: .now() + .nanoseconds(Int(clamping: nanoseconds)))
            } else {
                wake.wait()
            }
        }
    }
}

/// Resumes a continuation with the first value it is given, whoever gives it (the work,
/// a timer, a cancellation); later values are dropped. Shared by ``DeadlineTimer/first(by:orElse:_:)``
/// and `Deadline.run`.
final class ResumeOnce<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, Never>?
        var early: Value?
        var done = false
        var cleanup: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    /// The continuation to resume; resumed at once if a value came before it.
    func install(_ continuation: CheckedContinuation<Value, Never>) {
        let early = state.withLock { state -> Value? in
            if let early = state.early {
                state.early = nil
                return early
            }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    /// Runs `cleanup` once the first value has come (at once if it has).
    func onResume(_ cleanup: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.done { return true }
            state.cleanup = cleanup
            return false
        }
        if runNow { cleanup() }
    }

    /// Whether `value` was the first.
    @discardableResult
    func resume(_ value: Value) -> Bool {
        let (first, continuation, cleanup) = state.withLock {
            state -> (Bool, CheckedContinuation<Value, Never>?, (@Sendable () -> Void)?) in
            guard !state.done else { return (false, nil, nil) }
            state.done = true
            defer {
                state.continuation = nil
                state.cleanup = nil
            }
            if state.continuation == nil { state.early = value }
            return (true, state.continuation, state.cleanup)
        }
        continuation?.resume(returning: value)
        cleanup?()
        return first
    }
}
