import Foundation
@testable import NotifyRoute
import NotifyRouteTestSupport
import Testing

/// Silences and the pause as a `send` reads them: once per wave, and without history.db
/// while `history.db-nocontrols` says that none is stored. Each `RouterMemory` here is its
/// own connection, as another process's would be.
@Suite struct HistoryControlsTests {
    let directory: String
    let start = Date(timeIntervalSince1970: 1_790_000_000)

    init() throws {
        directory = try TestEnvironment.temporaryDirectory("notify-route-controls").path
        chmod(directory, 0o700)
    }

    func memory() -> RouterMemory {
        RouterMemory(directory: directory, keepsOpen: false, notice: { Issue.record("notice: \($0)") })
    }

    /// Records one event, as the end of a `send` does.
    func record(_ memory: RouterMemory, at time: Date) {
        let report = DeliveryReport(event: ResolvedEvent(title: "recorded"), outcomes: [
            SinkOutcome(sink: "tty", kind: "terminal", status: .delivered, route: "route 1"),
        ])
        memory.record(report, input: NotificationEvent(title: "recorded"), settings: HistorySettings(), now: time, keep: true)
    }

    /// How many of this process's descriptors are open on history.db.
    func openDatabases() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").filter { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) == directory + "/history.db"
        }.count
    }

    var markerExists: Bool { FileManager.default.fileExists(atPath: directory + "/history.db-nocontrols") }

    @Test func withNoControlsASendDoesNotOpenTheDatabaseForThem() throws {
        record(memory(), at: start)
        #expect(markerExists)
        let reader = memory()
        #expect(try openDatabases() == 0)
        let controls = reader.controls(at: start.addingTimeInterval(1))
        #expect(controls.isEmpty)
        #expect(try openDatabases() == 0)
    }

    @Test func aSilenceFromAnotherConnectionHoldsTheNextReadUntilItEnds() throws {
        let sender = memory()
        record(sender, at: start)
        let matcher = try MatcherLine.parse(["source=backup*"])
        let silence = try memory().addSilence(matcher, starts: start, ends: start.addingTimeInterval(3600), comment: nil)
        #expect(!markerExists)
        #expect(sender.controls(at: start.addingTimeInterval(1)).silences.map(\.id) == [silence.id])
        // The next recorded event writes the marker again, good until the silence ends.
        record(sender, at: start.addingTimeInterval(2))
        #expect(markerExists)
        #expect(memory().controls(at: start.addingTimeInterval(3599)).silences.map(\.id) == [silence.id])
        let after = memory()
        #expect(after.controls(at: start.addingTimeInterval(3600)).isEmpty)
        #expect(try openDatabases() == 0)
        // Expired early, it is dropped from the marker's promise with the next record.
        let second = try memory().addSilence(matcher, starts: start, ends: start.addingTimeInterval(7200), comment: nil)
        #expect(try memory().expireSilence(second.id, now: start.addingTimeInterval(10)) == second.id)
        #expect(!markerExists)
        let later = start.addingTimeInterval(11)
        #expect(sender.controls(at: later).silences.filter { $0.isActive(at: later) }.map(\.id) == [silence.id])
        record(sender, at: start.addingTimeInterval(12))
        #expect(memory().controls(at: start.addingTimeInterval(3600)).isEmpty)
    }

    @Test func aPauseFromAnotherConnectionHoldsUntilItIsReleased() throws {
        let sender = memory()
        record(sender, at: start)
        try memory().pause(below: .critical, until: start.addingTimeInterval(60), now: start)
        #expect(sender.controls(at: start.addingTimeInterval(1)).pause?.below == .critical)
        // While a pause is stored, even one whose time has passed (its events wait for
        // release), nothing says there are no controls.
        record(sender, at: start.addingTimeInterval(2))
        #expect(!markerExists)
        #expect(memory().controls(at: start.addingTimeInterval(61)).pause != nil)
        #expect(try memory().release(force: false, now: start.addingTimeInterval(61)).isEmpty)
        record(sender, at: start.addingTimeInterval(62))
        #expect(markerExists)
        #expect(memory().controls(at: start.addingTimeInterval(63)).isEmpty)
    }

    @Test func aMarkerThatIsNotARegularFileOfOursIsNotBelieved() throws {
        try FileManager.default.createDirectory(atPath: directory + "/history.db-nocontrols", withIntermediateDirectories: false)
        try memory().pause(below: .warning, until: nil, now: start)
        #expect(memory().controls(at: start).pause?.below == .warning)
    }
}
