#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
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
        guard let object = try? JSONDecoder().decode(Fields.self, from: Data(line)) else {
            throw ProtocolError(message: "the plugin answered a line that is not a JSON object: \(excerpt(text))")
        }
        guard let status = object.status else {
            throw ProtocolError(message: "the plugin's answer has no \"status\": \(excerpt(text))")
        }
        let id = object.id
        let notes = object.notes?.compactMap(\.self) ?? []
        let handle = object.handle.map { SinkHandle($0.text) }
        let message = object.error ?? object.reason
        let retryable = object.retryable ?? false
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

    /// The answer's keys; unknown keys are ignored, as the protocol promises.
    private struct Fields: Decodable {
        var id: Int?
        var status: String?
        /// Notes that are not strings are skipped.
        var notes: [String?]?
        var handle: Handle?
        var error: String?
        var reason: String?
        var retryable: Bool?

        /// A string or a number, kept as written.
        struct Handle: Decodable {
            var text: String
            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let text = try? container.decode(String.self) {
                    self.text = text
                } else if let integer = try? container.decode(Int64.self) {
                    text = String(integer)
                } else {
                    text = String(try container.decode(Double.self))
                }
            }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try? container.decodeIfPresent(Int.self, forKey: .id)
            status = try? container.decodeIfPresent(String.self, forKey: .status)
            notes = (try? container.decodeIfPresent([Note].self, forKey: .notes))?.map(\.text)
            handle = try? container.decodeIfPresent(Handle.self, forKey: .handle)
            error = try? container.decodeIfPresent(String.self, forKey: .error)
            reason = try? container.decodeIfPresent(String.self, forKey: .reason)
            retryable = try? container.decodeIfPresent(Bool.self, forKey: .retryable)
        }

        private enum CodingKeys: String, CodingKey { case id, status, notes, handle, error, reason, retryable }

        /// One element of `notes`: its text when it is a string.
        private struct Note: Decodable {
            var text: String?
            init(from decoder: any Decoder) throws {
                text = try? decoder.singleValueContainer().decode(String.self)
            }
        }
    }

    private static func excerpt(_ text: String) -> String {
        let line = text.count > 120 ? String(text.prefix(120)) + "…" : text
        return "\"" + TextSanitizer.clean(line, keepNewlines: false) + "\""
    }
}
