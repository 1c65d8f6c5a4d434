import CYAML

/// A YAML tree to write, with the style of each node: what `config show` builds.
package indirect enum YAMLOutput {
    /// How a scalar is written; libyaml quotes a `plain` one that cannot be plain.
    package enum ScalarStyle: Sendable {
        case plain, doubleQuoted

        var libyaml: yaml_scalar_style_t {
            switch self {
            case .plain: YAML_PLAIN_SCALAR_STYLE
            case .doubleQuoted: YAML_DOUBLE_QUOTED_SCALAR_STYLE
            }
        }
    }

    case scalar(String, ScalarStyle)
    /// Nothing: a plain `null`.
    case null
    case sequence([YAMLOutput], flow: Bool)
    case mapping([(key: YAMLOutput, value: YAMLOutput)], flow: Bool)

    /// A mapping key, or a value libyaml may write plain (quoted when it would load as
    /// something else: `null`, `~` or empty).
    package static func key(_ text: String) -> YAMLOutput { .scalar(text, .plain) }
}

/// Writes a ``YAMLOutput`` as one YAML document with libyaml's emitter (`yaml_emitter_*`),
/// which quotes and escapes whatever needs it: 2-space indent, 80 columns, non-ASCII escaped.
package enum YAMLEmitter {
    package struct EmitError: Error, CustomStringConvertible {
        package var description: String
    }

    package static func serialize(_ root: YAMLOutput) throws(EmitError) -> String {
        let emitter = UnsafeMutablePointer<yaml_emitter_t>.allocate(capacity: 1)
        defer { emitter.deallocate() }
        guard yaml_emitter_initialize(emitter) == 1 else { throw EmitError(description: "cannot initialise libyaml's emitter") }
        defer { yaml_emitter_delete(emitter) }

        var output: [UInt8] = []
        try withUnsafeMutablePointer(to: &output) { outputPointer throws(EmitError) in
            yaml_emitter_set_output(emitter, { context, buffer, size in
                guard let context, let buffer else { return 0 }
                context.assumingMemoryBound(to: [UInt8].self).pointee.append(contentsOf: UnsafeBufferPointer(start: buffer, count: size))
                return 1
            }, outputPointer)
            yaml_emitter_set_encoding(emitter, YAML_UTF8_ENCODING)
            yaml_emitter_set_unicode(emitter, 0)
            yaml_emitter_set_break(emitter, YAML_LN_BREAK)

            var event = yaml_event_t()
            yaml_stream_start_event_initialize(&event, YAML_UTF8_ENCODING)
            try emit(&event, emitter)
            yaml_document_start_event_initialize(&event, nil, nil, nil, 1)
            try emit(&event, emitter)
            try emitNode(root, emitter)
            yaml_document_end_event_initialize(&event, 1)
            try emit(&event, emitter)
            yaml_stream_end_event_initialize(&event)
            try emit(&event, emitter)
            guard yaml_emitter_flush(emitter) == 1 else { throw error(emitter) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func emitNode(_ node: YAMLOutput, _ emitter: UnsafeMutablePointer<yaml_emitter_t>) throws(EmitError) {
        var event = yaml_event_t()
        switch node {
        case .scalar(let text, var style):
            // libyaml quotes what cannot be plain, but "null" or "~" can: they would load back as nothing.
            if style == .plain, YAMLNode.nullSpellings.contains(text) { style = .doubleQuoted }
            var bytes = Array(text.utf8)
            bytes.withUnsafeMutableBufferPointer { value in
                // No tag, implicit both plain and quoted: the text is all there is.
                _ = yaml_scalar_event_initialize(&event, nil, nil, value.baseAddress, Int32(value.count), 1, 1, style.libyaml)
            }
            try emit(&event, emitter)
        case .null:
            var bytes = Array("null".utf8)
            bytes.withUnsafeMutableBufferPointer { value in
                _ = yaml_scalar_event_initialize(&event, nil, nil, value.baseAddress, Int32(value.count), 1, 0, YAML_PLAIN_SCALAR_STYLE)
            }
            try emit(&event, emitter)
        case .sequence(let items, let flow):
            yaml_sequence_start_event_initialize(&event, nil, nil, 1, flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE)
            try emit(&event, emitter)
            for item in items { try emitNode(item, emitter) }
            yaml_sequence_end_event_initialize(&event)
            try emit(&event, emitter)
        case .mapping(let pairs, let flow):
            yaml_mapping_start_event_initialize(&event, nil, nil, 1, flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE)
            try emit(&event, emitter)
            for pair in pairs {
                try emitNode(pair.key, emitter)
                try emitNode(pair.value, emitter)
            }
            yaml_mapping_end_event_initialize(&event)
            try emit(&event, emitter)
        }
    }

    /// Hands `event` to libyaml, which takes it over and frees it, even when it fails.
    private static func emit(_ event: inout yaml_event_t, _ emitter: UnsafeMutablePointer<yaml_emitter_t>) throws(EmitError) {
        guard yaml_emitter_emit(emitter, &event) == 1 else { throw error(emitter) }
    }

    private static func error(_ emitter: UnsafeMutablePointer<yaml_emitter_t>) -> EmitError {
        EmitError(description: "cannot write YAML: \(emitter.pointee.problem.map { String(cString: $0) } ?? "unknown error")")
    }
}
