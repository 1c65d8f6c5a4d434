import Glibc
@testable import NotifyRouteDaemon
import Testing

/// The terminal a client names in its send: only names `ttyname` gives pass, and only a
/// device the client holds open (the rest is tested against a real terminal in
/// DaemonTerminalTests).
@Suite struct CallerTerminalTests {
    @Test(arguments: ["/dev/pts/0", "/dev/pts/17", "/dev/tty1", "/dev/ttyS0", "/dev/ttyUSB3"])
    func aTerminalNamePasses(_ path: String) {
        #expect(CallerTerminal.isTerminalName(path))
    }

    @Test(arguments: [
        "/dev/fd/2", "/dev/stderr", "/dev/tty", "/dev/pts/", "/dev/pts/ptmx", "/dev/pts/1/../../sda", "/dev/null",
        "/proc/self/fd/2", "dev/pts/1", "/dev/pts/1 ", "/dev/pts/" + String(repeating: "1", count: 80),
    ])
    func anythingElseIsRefused(_ path: String) {
        #expect(!CallerTerminal.isTerminalName(path))
        #expect(CallerTerminal.checked(path, heldBy: getpid()) == nil)
    }

    @Test func withoutTheClientsProcessNoTerminalPasses() {
        #expect(CallerTerminal.checked("/dev/pts/0", heldBy: nil) == nil)
        #expect(CallerTerminal.checked("/dev/pts/0", heldBy: 0) == nil)
    }
}
