@testable import NotifyRoute
import Testing
import FoundationEssentials

/// Keys are built by copying UTF-8 into one allocation: the same strings as appending.
@Suite struct KeyBuilderTests {
    static let parts = ["", "a", "bench12", "warning", "é\u{301}x", "🙂 emoji", String(repeating: "long ", count: 20), "\u{1F}\u{1E}"]

    @Test func joinsLikeAppending() {
        for first in Self.parts {
            for second in Self.parts {
                #expect(KeyBuilder.join(first, second, separator: 0x1E) == first + "\u{1E}" + second)
                #expect(KeyBuilder.concatenate(first, second) == first + second)
                #expect(RouterState.key(sink: first, second) == first + "\u{1E}" + second)
            }
        }
    }

    @Test func buildsTheDefaultDedupKeyLikeAppending() {
        for source in Self.parts + [nil as String?] {
            for body in [nil, "", "90%\nfull", "é"] as [String?] {
                let key = ResolvedEvent.defaultDedupKey(level: .warning, source: source, title: "Disk \u{1F4BE} full", body: body)
                #expect(key == "warning\u{1F}" + (source ?? "") + "\u{1F}Disk \u{1F4BE} full\u{1F}" + (body ?? ""))
            }
        }
    }

    @Test func rendersTemplatesOfAnyLength() throws {
        let subject = MatchSubject(level: .error, source: "db.pool", app: "svc", title: "Down", body: nil, category: "net")
        #expect(try KeyTemplate("{source}").render(subject) == "db.pool")
        #expect(try KeyTemplate("shard-{source}").render(subject) == "shard-db.pool")
        #expect(try KeyTemplate("{app}/{level}/{title}:{body}").render(subject) == "svc/error/Down:")
        #expect(try KeyTemplate("").render(subject) == "")
    }
}

@Suite struct StateKeyTests {
    /// A key made from its parts equals the one read from its text, hashes alike, and
    /// gives the text back; a text without a separator is all key.
    @Test(arguments: [("desk", "backup"), ("a", ""), ("", "x\u{1E}y"), ("s\u{1E}t", "k"), ("é", "e\u{301}")])
    func partsAndTextAgree(sink: String, key: String) {
        let made = RouterState.Key(sink: sink, key: key)
        let read = RouterState.Key(sink + "\u{1E}" + key)
        #expect(made == read)
        #expect(made.hashValue == read.hashValue)
        #expect(made.text == sink + "\u{1E}" + key)
        #expect(Set([made, read]).count == 1)
        #expect([made: 1][read] == 1)
        let plain = RouterState.Key("no separator")
        #expect(plain.sink == nil && plain.key == "no separator" && plain.text == "no separator")
        #expect(plain != RouterState.Key(sink: "", key: "no separator"))
    }
}

@Suite struct HandleEvictionTests {
    /// Past the bound, handles are cut to 90% by when they were last used: one used
    /// again outlives older ones.
    @Test func leastRecentlyUsedHandlesGo() {
        var state = RouterState()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for index in 0..<10 {
            state.storeHandle(.init(handle: SinkHandle("\(index)"), lastUsed: start.addingTimeInterval(Double(index))),
                              forKey: RouterState.Key(sink: "s", key: "k\(index)"))
        }
        // k0 used again: now the most recent.
        state.storeHandle(.init(handle: SinkHandle("0"), lastUsed: start.addingTimeInterval(20)), forKey: RouterState.Key(sink: "s", key: "k0"))
        state.storeHandle(.init(handle: SinkHandle("10"), lastUsed: start.addingTimeInterval(21)), forKey: RouterState.Key(sink: "s", key: "k10"))
        state.evict(maxEntries: 10)
        #expect(state.handles.count == 9)
        let kept = Set(state.handles.keys.map(\.key))
        #expect(kept == Set(["k0", "k10"] + (3...9).map { "k\($0)" }))
    }
}
