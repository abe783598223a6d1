import Hummingbird
public import Logging
public import ServiceLifecycle
import UnixSignals

/// Runs the proxy until SIGTERM or SIGINT: then it stops accepting connections, lets the requests in flight finish
/// within ``ServerConfiguration/shutdownGracePeriod`` (cancelling what is left after it), shuts the downloader down
/// and returns. `services` run beside it, started before it and stopped after it (a trace exporter, which then
/// sends the last requests' spans).
///
/// ```swift
/// try await runServer(configuration: ServerConfiguration(port: 8080))
/// ```
public func runServer(
    configuration: ServerConfiguration, logger: Logger = Logger(label: "osprey.serve"), services: [any Service] = []
) async throws {
    let app = buildApplication(configuration: configuration, logger: logger)
    // Services shut down last to first: the notice first, then the application, which stops accepting and waits
    // for its requests, then the caller's.
    var group = ServiceGroupConfiguration(
        services: services.map { .init(service: $0) } + [
            .init(service: app),
            .init(service: ShutdownNotice(logger: logger), successTerminationBehavior: .ignore),
        ],
        gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    group.maximumGracefulShutdownDuration = configuration.shutdownGracePeriod
    try await ServiceGroup(configuration: group).run()
}

/// Logs, at info, that a graceful shutdown has begun, before the server stops accepting.
private struct ShutdownNotice: Service {
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        logger.info("shutting down: no new connections; finishing the requests in flight")
    }
}
