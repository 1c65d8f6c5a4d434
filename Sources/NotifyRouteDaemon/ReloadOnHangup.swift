import Glibc
import Logging
import NotifyRoute
import ServiceLifecycle
import UnixSignals

/// SIGHUP reloads the config, as `notify-route reload` does.
package struct ReloadOnHangup: Service {
    let host: RouterHost
    let daemon: RouterDaemon
    let logger: Logger

    package init(host: RouterHost, daemon: RouterDaemon, logger: Logger) {
        self.host = host
        self.daemon = daemon
        self.logger = logger
    }

    package func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            do {
                Systemd.notify("RELOADING=1")
                let router = try await host.reload()
                await daemon.applySocketAccess()
                logger.info("reloaded on SIGHUP", metadata: ["config": "\(router.configuration.origin)"])
            } catch {
                logger.error("reload on SIGHUP refused; the previous config stays: \(error)")
            }
            Systemd.notify("READY=1")
        }
    }
}
