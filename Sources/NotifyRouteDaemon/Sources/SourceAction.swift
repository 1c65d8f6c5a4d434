import NotifyRoute

/// What a source asks of the daemon's router: an event to route, or a notification to close.
package enum SourceAction: Sendable, Equatable {
    case send(NotificationEvent)
    case close(replaceKey: String)
}

extension SourceDeclaration {
    /// The event of one record: the templates rendered over its fields, a missing field empty.
    /// `recordLevel` is what the record says (its PRIORITY), at most ``maxLevel``.
    package func event(from fields: [String: String], level recordLevel: Level) -> NotificationEvent {
        let lookup: (String) -> String? = { fields[$0] }
        func nonEmpty(_ text: String) -> String? { text.isEmpty ? nil : text }
        // A title is one line: a multi-line MESSAGE keeps its lines apart with spaces.
        let title = effectiveTitle.render(lookup).split(whereSeparator: \.isNewline).joined(separator: " ")
        return NotificationEvent(
            title: title.isEmpty ? name : title,
            body: effectiveBody.flatMap { nonEmpty($0.render(lookup)) },
            level: effectiveLevel(recordLevel),
            app: nonEmpty(effectiveApp.render(lookup)),
            source: source ?? name,
            tags: tags,
            dedupKey: dedupKey.flatMap { nonEmpty($0.render(lookup)) },
            replaceKey: effectiveReplaceKey.flatMap { nonEmpty($0.render(lookup)) })
    }

    /// Every field the source looks at: its conditions, its templates, and its kind's own.
    package var fieldsRead: Set<String> {
        var names = Set(match.map(\.field))
        for template in [effectiveTitle, effectiveBody, effectiveApp, dedupKey, effectiveReplaceKey].compactMap({ $0 }) {
            names.formUnion(template.fieldNames)
        }
        switch kind {
        case .journal: names.formUnion(["PRIORITY", "_SYSTEMD_UNIT", "_SYSTEMD_USER_UNIT"])
        case .units: names.formUnion(["_UID", "UNIT", "USER_UNIT", "MESSAGE_ID", "JOB_RESULT", "UNIT_RESULT"])
        }
        return names
    }

    package var effectiveReplaceKey: FieldTemplate? {
        replaceKey ?? (kind == .units ? Self.unitReplaceKey : nil)
    }

    // Valid by construction.
    private static let unitReplaceKey = try! FieldTemplate("unit:{UNIT}")
}
