import Glibc

/// A named OS thread for work that must never run on Swift's cooperative pool:
/// blocking reads of a pipe, a C library's main loop, a writer that may wait on a
/// stuck socket.
///
/// Foundation's `Thread` would do, but it lives in swift-corelibs-foundation, which a
/// statically linked binary then carries whole, ICU included (about 60 MB and 2.7 ms
/// of every start); this is the few lines of pthread it needs.
package enum DetachedThread {
    /// Starts `body` on a new detached thread. Returns `false` when the system refuses a thread.
    @discardableResult
    package static func start(_ body: @escaping @Sendable () -> Void) -> Bool {
        let box = Unmanaged.passRetained(Start(body: body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
            start.body()
            return nil
        }, box)
        guard status == 0 else {
            Unmanaged<Start>.fromOpaque(box).release()
            return false
        }
        pthread_detach(thread)
        return true
    }

    private final class Start {
        let body: @Sendable () -> Void
        init(body: @escaping @Sendable () -> Void) {
            self.body = body
        }
    }
}
