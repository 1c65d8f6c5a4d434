import CYAML

/// A YAML node as libyaml's events describe it, before the config loader checks and
/// converts it. An alias is the node its anchor named, shared, not copied.
package indirect enum YAMLNode {
    case scalar(String, plain: Bool, at: YAMLMark)
    case sequence([YAMLNode], at: YAMLMark)
    case mapping([(key: YAMLNode, value: YAMLNode)], at: YAMLMark)

    /// The plain scalars that mean "nothing" (YAML 1.1's null); quoted, they are strings.
    package static let nullSpellings: Set<String> = ["", "~", "null", "Null", "NULL"]

    package var mark: YAMLMark {
        switch self {
        case .scalar(_, _, let mark), .sequence(_, let mark), .mapping(_, let mark): mark
        }
    }
}

/// A 1-based line and column; libyaml counts columns in Unicode scalars.
package struct YAMLMark: Hashable, Sendable {
    package var line: Int
    package var column: Int

    package init(line: Int, column: Int) {
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
/// `maximumDepth`: a deeply nested file can exhaust neither the thread's stack nor the
/// memory (libyaml 0.2.5 itself has no nesting limit).
package struct YAMLComposer: ~Copyable {
    private let parser: UnsafeMutablePointer<yaml_parser_t>
    private let maximumDepth: Int
    private var anchors: [String: YAMLNode] = [:]

    /// `input` must stay valid until the composer is gone.
    init(input: UnsafeBufferPointer<UInt8>, maximumDepth: Int) {
        parser = .allocate(capacity: 1)
        yaml_parser_initialize(parser)
        yaml_parser_set_encoding(parser, YAML_UTF8_ENCODING)
        yaml_parser_set_input_string(parser, input.baseAddress, input.count)
        self.maximumDepth = maximumDepth
    }

    deinit {
        yaml_parser_delete(parser)
        parser.deallocate()
    }

    /// Parses `yaml` as one document; nil for a stream with no document at all.
    package static func singleRoot(yaml: String, maximumDepth: Int) throws(YAMLError) -> YAMLNode? {
        var text = yaml
        return try text.withUTF8 { bytes in
            Result { () throws(YAMLError) in
                var composer = YAMLComposer(input: bytes, maximumDepth: maximumDepth)
                return try composer.singleRoot()
            }
        }.get()
    }

    mutating func singleRoot() throws(YAMLError) -> YAMLNode? {
        _ = try next { _ in }  // STREAM-START
        guard try next({ $0.type }) != YAML_STREAM_END_EVENT else { return nil }
        let root = try composeNode()
        _ = try next { _ in }  // DOCUMENT-END
        let (type, mark) = try next { ($0.type, YAMLMark($0.start_mark)) }
        guard type == YAML_STREAM_END_EVENT else {
            throw YAMLError(.invalid("expected a single document in the stream: but found another document"), at: .mark(mark))
        }
        return root
    }

    private enum Open {
        case sequence([YAMLNode], at: YAMLMark, anchor: String?)
        case mapping([(key: YAMLNode, value: YAMLNode)], pendingKey: YAMLNode?, at: YAMLMark, anchor: String?)
    }

    private mutating func composeNode() throws(YAMLError) -> YAMLNode {
        var stack: [Open] = []
        while true {
            let finished: YAMLNode
            var anchor: String?
            let (type, mark, payload) = try next { event -> (yaml_event_type_t, YAMLMark, Payload) in
                (event.type, YAMLMark(event.start_mark), Payload(event))
            }
            // Where a check of the finished tree would stop, stop now: same place.
            func checkDepth(at mark: YAMLMark) throws(YAMLError) {
                guard stack.count < maximumDepth else { throw YAMLError(.tooDeep, at: .mark(mark)) }
            }
            switch (type, payload) {
            case (YAML_ALIAS_EVENT, .anchor(let name?)):
                guard let node = anchors[name] else {
                    throw YAMLError(.invalid("found undefined alias"), at: .mark(mark))
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
    /// reads; the error names every repeated key with where it first was, and sits on the
    /// first repetition: the line to delete or rename.
    private func checkDuplicates(_ pairs: [(key: YAMLNode, value: YAMLNode)]) throws(YAMLError) {
        guard pairs.count > 1 else { return }
        var first: [String: YAMLMark] = [:]
        var repeated: [YAMLError.DuplicateKey] = []
        for pair in pairs {
            guard case .scalar(let name, _, let mark) = pair.key else { continue }
            if let earlier = first[name] {
                if !repeated.contains(where: { $0.name == name }) { repeated.append(.init(name: name, first: earlier, again: mark)) }
            } else {
                first[name] = mark
            }
        }
        guard let earliest = repeated.first else { return }
        throw YAMLError(.duplicateKeys(repeated), at: .mark(earliest.again))
    }

    /// The next event, read by `body` before libyaml frees it.
    private mutating func next<T>(_ body: (yaml_event_t) -> T) throws(YAMLError) -> T {
        var event = yaml_event_t()
        guard yaml_parser_parse(parser, &event) == 1 else { throw parseError() }
        defer { yaml_event_delete(&event) }
        return body(event)
    }

    /// libyaml's own words, at its problem mark: `while scanning ...: found ...`.
    private func parseError() -> YAMLError {
        let state = parser.pointee
        let problem = state.problem.map { String(cString: $0) } ?? "unknown error"
        switch state.error {
        case YAML_MEMORY_ERROR:
            return YAMLError(.invalid("out of memory"), at: .mark(YAMLMark(line: 1, column: 1)))
        case YAML_READER_ERROR:
            return YAMLError(.invalid(problem), at: .byteOffset(state.problem_offset))
        default:
            let mark = YAMLMark(state.problem_mark)
            if problem.hasPrefix("Maximum nesting level reached") {
                // A libyaml with its own limit (1000): say it as ours, not as its C API.
                return YAMLError(.tooDeep, at: .mark(mark))
            }
            // libyaml's contexts ("while parsing a block mapping") are ASCII.
            let prefix = state.context.map { "\(String(cString: $0).trimmingASCIISpaces()): " } ?? ""
            return YAMLError(.invalid(prefix + problem), at: .mark(mark))
        }
    }
}

/// Why a YAML text could not be composed, and where.
package struct YAMLError: Error, Hashable, Sendable {
    package enum Problem: Hashable, Sendable {
        /// Not YAML, in libyaml's words or ours (`found undefined alias`).
        case invalid(String)
        /// Keys that appear more than once in one mapping, in the order they repeat; the
        /// position is the first repetition.
        case duplicateKeys([DuplicateKey])
        /// Nested deeper than the composer's `maximumDepth`.
        case tooDeep
    }

    /// A repeated key of a mapping, and where it first was.
    package struct DuplicateKey: Hashable, Sendable {
        package var name: String
        package var first: YAMLMark
        /// Where it first repeats.
        package var again: YAMLMark

        package init(name: String, first: YAMLMark, again: YAMLMark) {
            self.name = name
            self.first = first
            self.again = again
        }
    }

    /// A line and column, or for a text that is not UTF-8 the offset of the bad byte.
    package enum Position: Hashable, Sendable {
        case mark(YAMLMark)
        case byteOffset(Int)
    }

    package var problem: Problem
    package var position: Position

    init(_ problem: Problem, at position: Position) {
        self.problem = problem
        self.position = position
    }
}

extension String {
    fileprivate func trimmingASCIISpaces() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return self[first...last]
    }
}
