public import Hummingbird
import Osprey
import OspreyCodecs

/// Builds the `osprey serve` HTTP application. `osprey serve` and the tests both go through here, so what the tests
/// exercise is exactly what runs.
///
/// ```swift
/// let app = buildApplication(configuration: .init(port: 8080))
/// try await app.runService()
/// ```
public func buildApplication(configuration: ServerConfiguration) -> some ApplicationProtocol {
    let router = Router()
    router.get("/health") { _, _ in
        HealthResponse(status: "ok", version: OspreyVersion.current)
    }
    return Application(
        router: router,
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port),
            serverName: "osprey/\(OspreyVersion.current)"
        )
    )
}

/// The body of `GET /health`: `{"status":"ok","version":"0.1.0"}`.
struct HealthResponse: ResponseCodable {
    let status: String
    let version: String
}
