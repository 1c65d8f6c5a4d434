import NotifyRoute

/// `kind: journal`: a record whose fields hold every condition of `match` (and, with
/// `units`, whose `_SYSTEMD_UNIT` or `_SYSTEMD_USER_UNIT` matches one) becomes an event,
/// its level from `PRIORITY` (at most `max_level`) unless the source sets one.
struct JournalSource {
    let declaration: SourceDeclaration

    func event(for fields: [String: String]) -> NotificationEvent? {
        guard declaration.match.allSatisfy({ $0.holds(fields[$0.field]) }) else { return nil }
        if let units = declaration.units {
            let unit = fields["_SYSTEMD_UNIT"] ?? fields["_SYSTEMD_USER_UNIT"] ?? ""
            guard units.contains(where: { $0.matches(unit) }) else { return nil }
        }
        return declaration.event(from: fields, level: Self.level(priority: fields["PRIORITY"]))
    }

    /// syslog's priorities as levels: 0-2 critical, 3 error, 4 warning, 5 notice, 6 info,
    /// 7 debug; a record without one is info, as journald reads it.
    static func level(priority: String?) -> Level {
        switch priority.flatMap({ Int($0) }) {
        case 0?, 1?, 2?: .critical
        case 3?: .error
        case 4?: .warning
        case 5?: .notice
        case 7?: .debug
        default: .info
        }
    }
}
