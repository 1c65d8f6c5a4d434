import Foundation
import NotifyRoute

/// One line a plugin writes on its stdout, answering one request.
///
/// ```json
/// {"id":1,"status":"delivered","handle":"17"}
/// {"id":2,"status":"failed","error":"HTTP 503","retryable":true}
/// ```
///
/// `status` is `delivered`, `queued` (with a `reason`), `failed`, `unavailable` or
/// `unsupported` (with an `error`). `id` echoes the request's; without it the answer
/// goes to the oldest request still waiting. `handle` (a string or a number) is kept
/// by the router per replace key; `notes` (strings) end up in the report.
struct ExecAnswer: Sendable {
    var id: Int?
    var result: Result<SinkReceipt, SinkError>

    struct ProtocolError: Error {
        var message: String
    }

    static func parse(_ line: [UInt8]) throws(ProtocolError) -> ExecAnswer {
        let text = String(decoding: line, as: UTF8.self)
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any] else {
            throw ProtocolError(message: "the plugin answered a line that is not a JSON object: \(excerpt(text))")
        }
        guard let status = object["status"] as? String else {
            throw ProtocolError(message: "the plugin's answer has no \"status\": \(excerpt(text))")
        }
        let id = (object["id"] as? NSNumber)?.intValue
        let notes = (object["notes"] as? [Any])?.compactMap { $0 as? String } ?? []
        var handle: SinkHandle?
        if let text = object["handle"] as? String {
            handle = SinkHandle(text)
        } else if let number = object["handle"] as? NSNumber {
            handle = SinkHandle(number.stringValue)
        }
        let message = (object["error"] as? String) ?? (object["reason"] as? String)
        let retryable = (object["retryable"] as? Bool) ?? false
        switch status {
        case "delivered":
            return ExecAnswer(id: id, result: .success(SinkReceipt(handle: handle, notes: notes)))
        case "queued":
            return ExecAnswer(id: id, result: .success(SinkReceipt(handle: handle, disposition: .queued(message ?? "queued by the plugin"), notes: notes)))
        case "failed":
            return ExecAnswer(id: id, result: .failure(SinkError(.failed, message ?? "the plugin reported a failure without an error", isRetryable: retryable)))
        case "unavailable":
            return ExecAnswer(id: id, result: .failure(SinkError(.unavailable, message ?? "the plugin is unavailable", isRetryable: retryable)))
        case "unsupported":
            return ExecAnswer(id: id, result: .failure(SinkError(.unsupported, message ?? "the plugin does not support this request")))
        default:
            throw ProtocolError(message: "unknown status \"\(status)\" from the plugin; expected delivered, queued, failed, unavailable or unsupported")
        }
    }

    private static func excerpt(_ text: String) -> String {
        let line = text.count > 120 ? String(text.prefix(120)) + "…" : text
        return "\"" + TextSanitizer.clean(line, keepNewlines: false) + "\""
    }
}
