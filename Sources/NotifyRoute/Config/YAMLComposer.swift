import CYAML

/// A YAML node as libyaml's events describe it, before ``ConfigNode/parse(yaml:file:)``
/// checks and converts it. An alias is the node its anchor named, shared, not copied.
indirect enum YAMLNode {
    case scalar(String, plain: Bool, at: YAMLMark)
    case sequence([YAMLNode], at: YAMLMark)
    case mapping([(key: YAMLNode, value: YAMLNode)], at: YAMLMark)

    var mark: YAMLMark {
        switch self {
        case .scalar(_, _, let mark), .sequence(_, let mark), .mapping(_, let mark): mark
        }
    }
}

/// A 1-based line and column; libyaml counts columns in Unicode scalars.
struct YAMLMark {
    var line: Int
    var column: Int

    init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    init(_ mark: yaml_mark_t) {
        self.init(line: mark.line + 1, column: mark.column + 1)
    }
}

/// Composes the one document of a YAML text from libyaml's event parser
/// (`yaml_parser_parse`): anchors and aliases resolved, duplicate keys refused.
///
/// Iterative, with its own stack, and it stops at the first node nested deeper than
/// ``ConfigNode/maximumDepth``: a deeply nested file can exhaust neither the thread's
/// stack nor the memory (libyaml 0.2.5 itself has no nesting limit).
struct YAMLComposer: ~Copyable {
    private let parser: UnsafeMutablePointer<yaml_parser_t>
    private let file: String
    private let text: String
    private var anchors: [String: YAMLNode] = [:]

    /// `input` must stay valid until the composer is gone.
    init(input: UnsafeBufferPointer<UInt8>, text: String, file: String) {
        parser = .allocate(capacity: 1)
        yaml_parser_initialize(parser)
        yaml_parser_set_encoding(parser, YAML_UTF8_ENCODING)
        yaml_parser_set_input_string(parser, input.baseAddress, input.count)
        self.file = file
        self.text = text
    }

    deinit {
        yaml_parser_delete(parser)
        parser.deallocate()
    }

    /// Parses `yaml` as one document; nil for a stream with no document at all.
    static func singleRoot(yaml: String, file: String) throws(ConfigError) -> YAMLNode? {
        var text = yaml
        return try text.withUTF8 { bytes in
            Result { () throws(ConfigError) in
                var composer = YAMLComposer(input: bytes, text: yaml, file: file)
                return try composer.singleRoot()
            }
        }.get()
    }

    mutating func singleRoot() throws(ConfigError) -> YAMLNode? {
        _ = try next { _ in }  // STREAM-START
        guard try next({ $0.type }) != YAML_STREAM_END_EVENT else { return nil }
        let root = try composeNode()
        _ = try next { _ in }  // DOCUMENT-END
        let (type, mark) = try next { ($0.type, YAMLMark($0.start_mark)) }
        guard type == YAML_STREAM_END_EVENT else {
            throw ConfigError("invalid YAML: expected a single document in the stream: but found another document", at: location(mark))
        }
        return root
    }

    private enum Open {
        case sequence([YAMLNode], at: YAMLMark, anchor: String?)
        case mapping([(key: YAMLNode, value: YAMLNode)], pendingKey: YAMLNode?, at: YAMLMark, anchor: String?)
    }

    private mutating func composeNode() throws(ConfigError) -> YAMLNode {
        var stack: [Open] = []
        while true {
            let finished: YAMLNode
            var anchor: String?
            let (type, mark, payload) = try next { event -> (yaml_event_type_t, YAMLMark, Payload) in
                (event.type, YAMLMark(event.start_mark), Payload(event))
            }
            // Where ConfigNode would stop on the finished tree, stop now: same place, same words.
            func checkDepth(at mark: YAMLMark) throws(ConfigError) {
                guard stack.count < ConfigNode.maximumDepth else { throw ConfigError.tooDeep(at: location(mark)) }
            }
            switch (type, payload) {
            case (YAML_ALIAS_EVENT, .anchor(let name?)):
                guard let node = anchors[name] else {
                    throw ConfigError("invalid YAML: found undefined alias", at: location(mark))
                }
                try checkDepth(at: node.mark)
                finished = node
            case (YAML_SCALAR_EVENT, .scalar(let value, let plain, let name)):
                try checkDepth(at: mark)
                finished = .scalar(value, plain: plain, at: mark)
                anchor = name
            case (YAML_SEQUENCE_START_EVENT, .anchor(let name)), (YAML_MAPPING_START_EVENT, .anchor(let name)):
                try checkDepth(at: mark)
                stack.append(type == YAML_SEQUENCE_START_EVENT
                    ? .sequence([], at: mark, anchor: name) : .mapping([], pendingKey: nil, at: mark, anchor: name))
                continue
            case (YAML_SEQUENCE_END_EVENT, _):
                guard case .sequence(let items, let start, let name)? = stack.popLast() else { preconditionFailure("unbalanced events") }
                finished = .sequence(items, at: start)
                anchor = name
            case (YAML_MAPPING_END_EVENT, _):
                guard case .mapping(let pairs, _, let start, let name)? = stack.popLast() else { preconditionFailure("unbalanced events") }
                try checkDuplicates(pairs)
                finished = .mapping(pairs, at: start)
                anchor = name
            default:
                preconditionFailure("libyaml sent event \(type.rawValue) inside a document")
            }
            if let anchor { anchors[anchor] = finished }
            switch stack.popLast() {
            case nil:
                return finished
            case .sequence(var items, let start, let name):
                items.append(finished)
                stack.append(.sequence(items, at: start, anchor: name))
            case .mapping(var pairs, let key?, let start, let name):
                pairs.append((key, finished))
                stack.append(.mapping(pairs, pendingKey: nil, at: start, anchor: name))
            case .mapping(let pairs, nil, let start, let name):
                stack.append(.mapping(pairs, pendingKey: finished, at: start, anchor: name))
            }
        }
    }

    /// What an event carries beyond its type and place, copied out before it is freed.
    private enum Payload {
        case none
        case anchor(String?)
        case scalar(String, plain: Bool, anchor: String?)

        init(_ event: yaml_event_t) {
            switch event.type {
            case YAML_ALIAS_EVENT:
                self = .anchor(Self.string(event.data.alias.anchor))
            case YAML_SCALAR_EVENT:
                let scalar = event.data.scalar
                // A scalar may hold NUL ("\0" escapes): read it by its length.
                let value = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
                self = .scalar(value, plain: scalar.style == YAML_PLAIN_SCALAR_STYLE, anchor: Self.string(scalar.anchor))
            case YAML_SEQUENCE_START_EVENT:
                self = .anchor(Self.string(event.data.sequence_start.anchor))
            case YAML_MAPPING_START_EVENT:
                self = .anchor(Self.string(event.data.mapping_start.anchor))
            default:
                self = .none
            }
        }

        static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
            pointer.map { String(cString: $0) }
        }
    }

    /// A key may appear once per mapping. Keys are compared as the strings the config
    /// reads; the error names every repeated key and sits on the first of them.
    private func checkDuplicates(_ pairs: [(key: YAMLNode, value: YAMLNode)]) throws(ConfigError) {
        guard pairs.count > 1 else { return }
        var first: [String: YAMLMark] = [:]
        var repeated: [String: YAMLMark] = [:]
        for pair in pairs {
            guard case .scalar(let name, _, let mark) = pair.key else { continue }
            if let earlier = first[name] { repeated[name] = earlier } else { first[name] = mark }
        }
        guard let smallest = repeated.keys.min() else { return }
        let keys = repeated.keys.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
        throw ConfigError("duplicate key \(keys) in one mapping; each key may appear once", at: location(repeated[smallest]!))
    }

    /// The next event, read by `body` before libyaml frees it.
    private mutating func next<T>(_ body: (yaml_event_t) -> T) throws(ConfigError) -> T {
        var event = yaml_event_t()
        guard yaml_parser_parse(parser, &event) == 1 else { throw parseError() }
        defer { yaml_event_delete(&event) }
        return body(event)
    }

    private func location(_ mark: YAMLMark) -> SourceLocation {
        SourceLocation(file: file, line: mark.line, column: mark.column)
    }

    /// libyaml's own words, at its problem mark: `invalid YAML: while scanning ...: found ...`.
    private func parseError() -> ConfigError {
        let state = parser.pointee
        let problem = state.problem.map { String(cString: $0) } ?? "unknown error"
        switch state.error {
        case YAML_MEMORY_ERROR:
            return ConfigError("invalid YAML: out of memory", at: location(YAMLMark(line: 1, column: 1)))
        case YAML_READER_ERROR:
            return ConfigError("invalid YAML: \(problem)",
                               at: ConfigError.location(ofByteOffset: state.problem_offset, in: text, file: file))
        default:
            let mark = YAMLMark(state.problem_mark)
            if problem.hasPrefix("Maximum nesting level reached") {
                // A libyaml with its own limit (1000): say it as ours, not as its C API.
                return ConfigError.tooDeep(at: location(mark))
            }
            let prefix = state.context.map { "\(String(cString: $0).trimmingWhitespace()): " } ?? ""
            return ConfigError("invalid YAML: \(prefix)\(problem)", at: location(mark))
        }
    }
}
