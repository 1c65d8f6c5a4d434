@testable import NotifyRouteNetwork
import Testing

/// How an error answer's body becomes the one line of the report, for the two shapes
/// Alertmanager 0.25 answers (both taken from a real one).
struct HTTPTransportTests {
    @Test func alertmanagersOwnRefusalIsAJSONString() {
        #expect(HTTPTransport.excerpt(#""invalid label set: invalid name \"bad-name\"""#) == #": invalid label set: invalid name "bad-name""#)
    }

    @Test func itsSchemasRefusalIsAnObjectWithAMessage() {
        let body = #"{"code":601,"message":"0.generatorURL in body must be of type uri: \"not a uri\""}"#
        #expect(HTTPTransport.excerpt(body) == #": 0.generatorURL in body must be of type uri: "not a uri""#)
    }

    @Test func anythingElseIsOneLineCut() {
        #expect(HTTPTransport.excerpt("<html>\n<h1>Bad Gateway</h1>\n</html>") == ": <html> <h1>Bad Gateway</h1> </html>")
        #expect(HTTPTransport.excerpt("  ") == "")
        let long = HTTPTransport.excerpt(String(repeating: "x", count: 10_000))
        #expect(long.hasSuffix("…") && long.utf8.count < 4_200)
    }
}
