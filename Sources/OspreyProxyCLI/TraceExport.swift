import ArgumentParser
import FoundationEssentials
import Logging
import ServiceLifecycle
import Tracing

#if OTLP
import OTel
#endif

/// The trace export of `osprey serve --otlp-endpoint`: swift-otel's tracer, which reads and writes W3C `traceparent`,
/// and the service that batches its spans and sends them to an OpenTelemetry collector over OTLP/HTTP (protobuf). Built
/// only with the package's `OTLP` trait; without it, asking for an export is an error, not a flag ignored.
struct TraceExport {
    /// Whether this build can export traces.
    static var isAvailable: Bool {
        #if OTLP
        true
        #else
        false
        #endif
    }

    let tracer: any Tracer
    let service: any Service
    /// Where the spans go.
    let url: String

    /// The collector's traces URL for `endpoint`: as given, or with `/v1/traces` when it names no path (OTLP/HTTP's
    /// default path for traces).
    ///
    /// - Throws: `ValidationError` when `endpoint` is not an http or https URL with a host.
    static func tracesURL(_ endpoint: String) throws -> String {
        guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(),
            ["http", "https"].contains(scheme),
            url.host(percentEncoded: false)?.isEmpty == false
        else {
            throw ValidationError("--otlp-endpoint '\(endpoint)' is not an http or https URL")
        }
        let path = url.path(percentEncoded: true)
        guard path.isEmpty || path == "/" else { return endpoint }
        return (endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint) + "/v1/traces"
    }

    /// Checks that this build can export to `endpoint`.
    ///
    /// - Throws: `ValidationError` when it cannot, or `endpoint` is not a URL.
    static func validate(_ endpoint: String) throws {
        _ = try tracesURL(endpoint)
        guard isAvailable else { throw unavailable }
    }

    private static let unavailable = ValidationError(
        "this osprey was built without trace export: build it with the OTLP trait "
            + "(make OSPREY_TRAITS=OTLP, or swift build --traits OTLP) to use --otlp-endpoint")

    /// An export to `endpoint`, as service `osprey` unless `OTEL_SERVICE_NAME` says otherwise; the other `OTEL_*`
    /// variables (sampler, headers, timeout) tune it as they tune any OpenTelemetry SDK. Only traces: metrics stay on
    /// `/metrics` and logs on standard error.
    init(endpoint: String, logger: Logger) throws {
        #if OTLP
        var configuration = OTel.Configuration.default
        configuration.serviceName = "osprey"
        configuration.metrics.enabled = false
        configuration.logs.enabled = false
        configuration.traces.exporter = .otlp
        url = try Self.tracesURL(endpoint)
        configuration.traces.otlpExporter.endpoint = url
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        configuration.diagnosticLogger = .custom(logger)
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        tracer = backend.factory
        service = backend.service
        #else
        throw Self.unavailable
        #endif
    }
}
