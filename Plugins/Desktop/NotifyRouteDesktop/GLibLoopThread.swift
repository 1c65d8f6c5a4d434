import CLibNotify
import Glibc
import NotifyRoute
import Synchronization

/// The one thread of the process that talks to libnotify and GDBus.
///
/// libnotify is process-wide (one `GDBusProxy` on the session bus, created lazily by
/// the first `show`), and its calls block for up to 25 s on a hung daemon; so every
/// call runs here, never on Swift's cooperative pool. The thread runs a `GMainLoop`
/// on a private `GMainContext`, pushed as the thread default before libnotify makes
/// its proxy, so `ActionInvoked` and `NotificationClosed` are dispatched here even
/// when nobody awaits anything.
///
/// Nothing happens until a desktop sink first needs the daemon (a delivery, a close or
/// ``DesktopSink/availability()``): then ``start()`` loads libnotify (`dlopen`) and
/// starts the thread, once per process.
final class GLibLoopThread: Sendable {
    private static let instance: Result<GLibLoopThread, SinkError> = {
        if let failure = nr_libnotify_load() {
            return .failure(SinkError(.unavailable, String(cString: failure)))
        }
        return .success(GLibLoopThread())
    }()

    /// The thread, loading libnotify and starting it on the first call.
    ///
    /// - Throws: `unavailable`, with the loader's reason, when libnotify cannot be loaded.
    static func start() throws(SinkError) -> GLibLoopThread {
        let thread = try instance.get()
        if !thread.loopClaimed.load(ordering: .acquiring) && thread.claimLoop() {
            var handle = pthread_t()
            let started = pthread_create(&handle, nil, { argument in
                GLibLoopThread.runLoop(OpaquePointer(argument))
                return nil
            }, UnsafeMutableRawPointer(thread.context.pointer))
            precondition(started == 0, "cannot start the GLib thread: \(String(cString: strerror(started)))")
            pthread_detach(handle)
        }
        return thread
    }

    /// The started thread, for code that runs on it (so libnotify is loaded).
    static var running: GLibLoopThread {
        guard case .success(let thread) = instance else { preconditionFailure("the GLib thread runs only once libnotify is loaded") }
        return thread
    }

    private let context: MainContext
    /// Whether a thread runs (or is about to run) the loop: exactly one ever does.
    private let loopClaimed = Atomic<Bool>(false)
    /// When the job running now started; `nil` when idle. Read by ``busyFor``.
    private static let jobStarted = Mutex<ContinuousClock.Instant?>(nil)

    /// The context only; jobs queued on it wait until a thread runs the loop.
    private init() {
        context = MainContext(g_main_context_new())
    }

    private func claimLoop() -> Bool {
        loopClaimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    /// Runs the loop on the calling thread, for the life of the process (exit() does not
    /// wait for it). The context becomes the thread's default before any job runs, so
    /// the proxy libnotify makes in the first job dispatches its signals here.
    private static func runLoop(_ context: OpaquePointer?) {
        nr_name_current_thread("notify-route-gl")
        g_main_context_push_thread_default(context)
        let loop = g_main_loop_new(context, 0)
        g_main_loop_run(loop)
    }

    /// How long the job running now has been running, `nil` when the thread is idle.
    /// A long answer means libnotify is stuck in a 25 s call on a hung daemon.
    static var busyFor: Duration? {
        jobStarted.withLock { started in started.map { ContinuousClock.now - $0 } }
    }

    /// Runs `body` on the GLib thread and returns its result. The caller's task is
    /// suspended, not blocked; jobs run one at a time, in order.
    func perform<T: Sendable>(_ body: @escaping @Sendable () throws(SinkError) -> T) async throws(SinkError) -> T {
        let result: Result<T, SinkError> = await withCheckedContinuation { continuation in
            submit {
                do throws(SinkError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// ``perform(_:)`` that gives up at `deadline` with `timedOut`, even when `body` is
    /// stuck in a libnotify call (25 s on a hung daemon): the caller is resumed by the
    /// ``DeadlineTimer``, and what `body` answers later is dropped.
    func perform<T: Sendable>(
        until deadline: ContinuousClock.Instant, orElse timedOut: @autoclosure @escaping @Sendable () -> SinkError,
        _ body: @escaping @Sendable () throws(SinkError) -> T
    ) async throws(SinkError) -> T {
        let result: Result<T, SinkError> = await DeadlineTimer.shared.first(by: deadline, orElse: .failure(timedOut())) { answer in
            submit {
                do throws(SinkError) {
                    answer(.success(try body()))
                } catch {
                    answer(.failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Queues `job` on the GLib thread without waiting for it.
    func submit(_ job: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Job {
            Self.jobStarted.withLock { $0 = .now }
            job()
            Self.jobStarted.withLock { $0 = nil }
        }).toOpaque()
        // An idle source attached to our context always runs on our thread, unlike
        // g_main_context_invoke, which runs the function in the caller when nobody owns the context yet.
        let source = g_idle_source_new()
        g_source_set_priority(source, G_PRIORITY_DEFAULT)
        g_source_set_callback(source, { data in
            Unmanaged<Job>.fromOpaque(data!).takeUnretainedValue().run()
            return 0  // G_SOURCE_REMOVE: run once
        }, box, { data in
            Unmanaged<Job>.fromOpaque(data!).release()
        })
        g_source_attach(source, context.pointer)
        g_source_unref(source)
    }
}

/// A queued closure, boxed to travel through a C `gpointer`.
private final class Job: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// The thread's `GMainContext`.
///
/// `@unchecked Sendable` because a raw pointer is not `Sendable`, but GLib documents
/// `g_source_attach` on a context as safe from any thread, and that is all other
/// threads do with it; the loop itself runs only on the GLib thread.
private struct MainContext: @unchecked Sendable {
    let pointer: OpaquePointer?
    init(_ pointer: OpaquePointer?) { self.pointer = pointer }
}
