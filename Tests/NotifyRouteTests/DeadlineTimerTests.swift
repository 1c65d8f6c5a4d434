import Glibc
import NotifyRoute
import Synchronization
import Testing

/// The timer thread that keeps sinks' deadlines (Deadline, the desktop sink).
@Suite struct DeadlineTimerTests {
    /// What fired, in order.
    final class Log: Sendable {
        private let items = Mutex<[String]>([])
        func append(_ item: String) { items.withLock { $0.append(item) } }
        var all: [String] { items.withLock { $0 } }
    }

    @Test func timersFireInTheOrderOfTheirInstantsNotOfSetting() async throws {
        let log = Log()
        let now = ContinuousClock.now
        DeadlineTimer.shared.schedule(at: now + .milliseconds(60)) { log.append("60") }
        DeadlineTimer.shared.schedule(at: now + .milliseconds(20)) { log.append("20") }
        DeadlineTimer.shared.schedule(at: now + .milliseconds(40)) { log.append("40a") }
        DeadlineTimer.shared.schedule(at: now + .milliseconds(40)) { log.append("40b") }
        DeadlineTimer.shared.schedule(at: now - .seconds(1)) { log.append("past") }
        try await Task.sleep(for: .milliseconds(300))
        #expect(log.all == ["past", "20", "40a", "40b", "60"])
    }

    @Test func aTimerFiresNotBeforeItsInstant() async throws {
        let fired = Mutex<ContinuousClock.Instant?>(nil)
        let due = ContinuousClock.now + .milliseconds(50)
        DeadlineTimer.shared.schedule(at: due) { fired.withLock { $0 = .now } }
        try await Task.sleep(for: .milliseconds(300))
        let at = try #require(fired.withLock { $0 })
        #expect(at >= due)
    }

    @Test func aCancelledTimerNeverFiresAndOthersOfTheSameInstantDo() async throws {
        let log = Log()
        let due = ContinuousClock.now + .milliseconds(30)
        let first = DeadlineTimer.shared.schedule(at: due) { log.append("first") }
        DeadlineTimer.shared.schedule(at: due) { log.append("second") }
        let third = DeadlineTimer.shared.schedule(at: due) { log.append("third") }
        DeadlineTimer.shared.cancel(first)
        DeadlineTimer.shared.cancel(third)
        try await Task.sleep(for: .milliseconds(200))
        #expect(log.all == ["second"])
        DeadlineTimer.shared.cancel(third)  // twice, or after firing: nothing happens
    }

    @Test func anEarlierTimerSetWhileTheThreadWaitsForALaterOneIsNotDelayed() async throws {
        let log = Log()
        let now = ContinuousClock.now
        let later = DeadlineTimer.shared.schedule(at: now + .seconds(5)) { log.append("late") }
        defer { DeadlineTimer.shared.cancel(later) }
        try await Task.sleep(for: .milliseconds(20))  // the thread now sleeps until 5 s
        let clock = ContinuousClock()
        let elapsed = await clock.measure {
            let value = await DeadlineTimer.shared.first(by: .now + .milliseconds(50), orElse: "timed out") { _ in }
            #expect(value == "timed out")
        }
        #expect(elapsed < .seconds(1))
        #expect(log.all.isEmpty)
    }

    @Test func firstTakesTheAnswerThatComesBeforeTheDeadline() async {
        let value = await DeadlineTimer.shared.first(by: .now + .seconds(5), orElse: "timed out") { answer in
            DetachedThread.start { answer("answered") }
        }
        #expect(value == "answered")
        // An answer given while `start` runs, before anyone waits, counts too.
        let early = await DeadlineTimer.shared.first(by: .now + .seconds(5), orElse: "timed out") { answer in answer("at once") }
        #expect(early == "at once")
    }

    @Test func firstGivesUpAtTheDeadlineAndDropsTheLateAnswer() async throws {
        let late = Mutex(false)
        let clock = ContinuousClock()
        var value = ""
        let elapsed = await clock.measure {
            value = await DeadlineTimer.shared.first(by: .now + .milliseconds(100), orElse: "timed out") { answer in
                DetachedThread.start {
                    usleep(400_000)
                    answer("too late")  // must not resume the continuation a second time
                    late.withLock { $0 = true }
                }
            }
        }
        #expect(value == "timed out")
        #expect(elapsed >= .milliseconds(100))
        #expect(elapsed < .seconds(1))
        try await Task.sleep(for: .milliseconds(500))
        #expect(late.withLock { $0 })
    }
}
