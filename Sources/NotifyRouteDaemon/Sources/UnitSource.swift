import Glibc
import NotifyRoute

/// `kind: units`: failed systemd units, from the messages systemd itself writes to the
/// journal about each unit (its catalog, `/usr/lib/systemd/catalog/systemd.catalog`):
///
/// - `MESSAGE_ID=d9b373ed55a64feb8242e02dbe79a49c` "Unit failed": the unit entered the
///   failed state, with `UNIT_RESULT` (`exit-code`, `signal`, `timeout`, `core-dump`, ...);
/// - `MESSAGE_ID=39f53479d3a045ac8e11786248231fbf` "A start job for unit has finished
///   successfully" (`JOB_RESULT=done`): the unit is active again.
///
/// The system manager names the unit in `UNIT`, a user manager in `USER_UNIT`. Only
/// records written by root or by this user count (journald's trusted `_UID`), so another
/// user cannot forge a failure, nor a line of its body (``lineMatches(unit:userManager:uid:)``).
/// A failure becomes an error (title `NAME failed`, body the result and the unit's last
/// log lines, replace key `unit:NAME`); the unit active again replaces it with a success,
/// or closes it (`recovered: close`).
struct UnitSource {
    static let failedMessageID = "d9b373ed55a64feb8242e02dbe79a49c"
    static let startedMessageID = "39f53479d3a045ac8e11786248231fbf"
    /// How many of the unit's last log lines a failure's body shows.
    static let lineCount = 10

    let declaration: SourceDeclaration
    /// The units this source reported failed and has not seen active again.
    var failed: Set<String>

    enum Change: Equatable {
        case failed(unit: String, userManager: Bool)
        case recovered(unit: String)
    }

    /// What a record says about a unit this source watches, if anything.
    func change(for fields: [String: String]) -> Change? {
        guard let uid = fields["_UID"], uid == "0" || uid == String(getuid()) else { return nil }
        let userManager = fields["UNIT"] == nil
        guard let unit = fields["UNIT"] ?? fields["USER_UNIT"], !unit.isEmpty else { return nil }
        if let units = declaration.units, !units.contains(where: { $0.matches(unit) }) { return nil }
        switch fields["MESSAGE_ID"] {
        case Self.failedMessageID?:
            guard declaration.match.allSatisfy({ $0.holds(fields[$0.field]) }) else { return nil }
            return .failed(unit: unit, userManager: userManager)
        case Self.startedMessageID? where fields["JOB_RESULT"] == nil || fields["JOB_RESULT"] == "done":
            return failed.contains(unit) ? .recovered(unit: unit) : nil
        default:
            return nil
        }
    }

    /// The error for a unit that failed; `lines` are its last log lines, oldest first.
    func failureEvent(unit: String, fields: [String: String], lines: [String]) -> NotificationEvent {
        var fields = fields
        fields["UNIT"] = unit
        fields["UNIT_RESULT"] = fields["UNIT_RESULT"] ?? "failed"
        fields["LINES"] = lines.joined(separator: "\n")
        var event = declaration.event(from: fields, level: .error)
        event.fields = ["UNIT": unit, "UNIT_RESULT": fields["UNIT_RESULT"] ?? ""]
        return event
    }

    /// What the unit active again does: a success replacing the error, or a close.
    func recoveryAction(unit: String) -> SourceAction {
        let fields = ["UNIT": unit]
        let replaceKey = declaration.effectiveReplaceKey?.render { fields[$0] } ?? "unit:\(unit)"
        switch declaration.recovery {
        case .close:
            return .close(replaceKey: replaceKey)
        case .notify:
            return .send(NotificationEvent(
                title: "\(unit) is active again", level: .success, source: declaration.source ?? declaration.name,
                tags: declaration.tags, replaceKey: replaceKey, fields: ["UNIT": unit]))
        }
    }

    /// The journal matches of a unit's own log lines and of systemd's lines about it, as
    /// `journalctl -u` (or `--user-unit`) shows them. Any user may write `UNIT=` or
    /// `USER_UNIT=`: only the trusted `_PID`/`_UID` journald adds say systemd wrote it.
    static func lineMatches(unit: String, userManager: Bool, uid: uid_t = getuid()) -> [String?] {
        guard userManager else {
            return ["_SYSTEMD_UNIT=\(unit)", nil, "UNIT=\(unit)", "_PID=1", nil, "UNIT=\(unit)", "_UID=0"]
        }
        // The user's manager runs as the user; a field given twice matches either value.
        let managers = uid == 0 ? ["_UID=0"] : ["_UID=0", "_UID=\(uid)"]
        return ["_SYSTEMD_USER_UNIT=\(unit)", "_UID=\(uid)", nil, "USER_UNIT=\(unit)"] + managers
    }
}
