import Glibc

/// Signal handling shared by the CLI and the plugins.
package enum Signals {
    /// Dies of `signalNumber` the way the process would have without a handler: the
    /// default disposition back, the signal unblocked on this thread (Dispatch's threads
    /// block signals), then raised.
    package static func reraise(_ signalNumber: Int32) {
        signal(signalNumber, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, signalNumber)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        raise(signalNumber)
    }
}
