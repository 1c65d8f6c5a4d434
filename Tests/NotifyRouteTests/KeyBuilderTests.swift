@testable import NotifyRoute
import Testing

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
