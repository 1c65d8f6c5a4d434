#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// Where the router reads the time for dedup windows and policies. Injected, so that
/// tests move time forward instead of sleeping.
public protocol RouterClock: Sendable {
    func now() -> Date
}

/// The system's wall clock.
public struct SystemClock: RouterClock {
    public init() {}
    public func now() -> Date { Date() }
}

/// A clock that only moves when told to: for tests.
///
/// ```swift
/// let clock = ManualClock()
/// clock.advance(by: .seconds(61))
/// ```
public final class ManualClock: RouterClock {
    private let current: Mutex<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = Mutex(start)
    }

    public func now() -> Date { current.withLock { $0 } }

    public func advance(by duration: Duration) {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
