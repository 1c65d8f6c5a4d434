/// A typed hint value: the freedesktop hints have fixed D-Bus types.
///
/// In a config file hints are text, typed by name (`transient: "true"` is a boolean,
/// `x: "10"` an int32, anything unknown a string); in code, say the type:
///
/// ```swift
/// DesktopSink(configuration: .init(hints: ["transient": .boolean(true), "desktop-entry": .string("backup")]))
/// ```
public enum DesktopHint: Hashable, Sendable {
    case string(String)
    case boolean(Bool)
    case int32(Int32)
    case byte(UInt8)

    /// The D-Bus type of the hints the specification defines; others are strings.
    static let specifiedTypes: [String: String] = [
        "action-icons": "boolean", "resident": "boolean", "transient": "boolean", "suppress-sound": "boolean",
        "x": "int32", "y": "int32", "value": "int32",
        "category": "string", "desktop-entry": "string", "image-path": "string", "sound-file": "string",
        "sound-name": "string",
    ]

    /// Reads a hint written in the config as text, typed by its name.
    ///
    /// - Throws: a message for the config error when the text does not fit the type.
    static func parse(name: String, text: String) -> Result<DesktopHint, HintError> {
        if name == "urgency" {
            return .failure(HintError(message: "hint \"urgency\" comes from the level (set levels.LEVEL.urgency instead)"))
        }
        if name.isEmpty { return .failure(HintError(message: "a hint name must not be empty")) }
        switch specifiedTypes[name] {
        case "boolean":
            switch text.lowercased() {
            case "true": return .success(.boolean(true))
            case "false": return .success(.boolean(false))
            default: return .failure(HintError(message: "hint \"\(name)\" must be true or false, not \"\(text)\""))
            }
        case "int32":
            guard let value = Int32(text) else {
                return .failure(HintError(message: "hint \"\(name)\" must be a whole number, not \"\(text)\""))
            }
            return .success(.int32(value))
        default:
            return .success(.string(text))
        }
    }

    struct HintError: Error {
        var message: String
    }
}
