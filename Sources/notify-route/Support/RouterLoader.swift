import ArgumentParser
import Foundation
import Logging
import NotifyRoute

/// Finds the config, loads it and builds the router; config problems become exit 78
/// with file:line:column on stderr, before anything is sent.
enum RouterLoader {
    static var embeddedConfig: String {
        String(decoding: PackageResources.notify_route_yaml, as: UTF8.self)
    }

    static func bootstrapLogging(verbose: Bool) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = verbose ? .debug : .critical
            return handler
        }
    }

    static func source(_ options: GlobalOptions) throws -> ConfigSource {
        do {
            return try ConfigSource.locate(
                explicitPath: options.config, environment: ProcessInfo.processInfo.environment, embedded: embeddedConfig)
        } catch {
            throw configFailure(error)
        }
    }

    static func load(_ options: GlobalOptions) throws -> (NotificationRouter, ConfigSource) {
        bootstrapLogging(verbose: options.verbose)
        ignoreSIGPIPE()
        let source = try source(options)
        return (try router(from: source), source)
    }

    static func router(from source: ConfigSource) throws -> NotificationRouter {
        do {
            let registry = try BuiltinPlugins.registry()
            let configuration = try RouterConfiguration.load(yaml: source.text, file: source.origin, registry: registry)
            return try NotificationRouter(configuration: configuration, registry: registry)
        } catch let error as ConfigError {
            throw configFailure(error)
        }
    }

    static func configFailure(_ error: ConfigError) -> ExitCode {
        Console.error(error.description)
        return ExitStatus.configError
    }

    /// A closed pipe on stderr must be a reported failure, not a silent death by SIGPIPE.
    static func ignoreSIGPIPE() {
        signal(SIGPIPE, SIG_IGN)
    }
}
