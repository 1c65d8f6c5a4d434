import Foundation
import NotifyRoute
@testable import NotifyRouteDesktop
import Testing

@Suite struct InteractionHubTests {
    /// A caller that learns of an interaction from a stream (the router's
    /// `firstInteraction`) can rely on the callback having seen it already.
    @Test func theCallbackHasSeenAnInteractionBeforeAnyStreamDoes() async throws {
        let seen = CallbackLog()
        // A slow callback, as a loaded machine makes any callback now and then.
        let hub = InteractionHub { item in
            Thread.sleep(forTimeInterval: 0.05)
            seen.append(item)
        }
        let stream = hub.stream()
        let items = (1...3).map { SinkInteraction(handle: SinkHandle("\($0)@:1.1"), interaction: .actionInvoked("ack")) }
        let publisher = Thread { for item in items { hub.publish(item) } }
        publisher.start()
        var received = 0
        for await item in stream {
            #expect(seen.items.contains(item), "the stream had \(item.handle) before the callback")
            received += 1
            if received == items.count { break }
        }
        #expect(seen.items == items)
    }

    @Test func aLateStreamGetsTheRecentHistoryThenLiveItems() async throws {
        let hub = InteractionHub(callback: nil)
        let early = SinkInteraction(handle: SinkHandle("1@:1.1"), interaction: .dismissed(.dismissed))
        hub.publish(early)
        var iterator = hub.stream().makeAsyncIterator()
        let late = SinkInteraction(handle: SinkHandle("2@:1.1"), interaction: .actionInvoked("ok"))
        hub.publish(late)
        #expect(await iterator.next() == early)
        #expect(await iterator.next() == late)
    }
}
