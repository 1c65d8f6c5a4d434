/// `MESSAGE_ID`s of the router's own journal messages, explained by the catalog file
/// `config/journal/notify-route.catalog` (install it into `/usr/lib/systemd/catalog/`
/// and run `journalctl --update-catalog`; `journalctl -x` then shows the explanation).
///
/// ```sh
/// journalctl MESSAGE_ID=78de28deb8fb46b9a1e9c93e587ce04d   # every sink failure
/// journalctl -x MESSAGE_ID=d2f27ed94d084edfacbfe5567569cc13
/// ```
public enum JournalCatalog {
    /// A sink failed to deliver an event (written by ``JournalSink/recordFailures(in:)``).
    public static let sinkFailed = "78de28deb8fb46b9a1e9c93e587ce04d"

    /// The journal sink's bounded queue was full and events were dropped while journald
    /// was not answering (written by the sink itself once journald answers again).
    public static let eventsDropped = "d2f27ed94d084edfacbfe5567569cc13"

    /// Every id with a one-line subject, as in the catalog file.
    public static let all: [(id: String, subject: String)] = [
        (sinkFailed, "A notify-route sink failed to deliver an event"),
        (eventsDropped, "notify-route dropped events: the journal queue was full"),
    ]
}
