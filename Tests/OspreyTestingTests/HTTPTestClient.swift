import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// A real HTTP client for exercising the origin server: AsyncHTTPClient, the transport Osprey itself uses.
struct Fetched {
    let status: Int
    let headers: HTTPHeaders
    let body: [UInt8]
    /// How many separate body parts arrived.
    let parts: Int
}

func withHTTPClient<Result>(
    redirects: HTTPClient.Configuration.RedirectConfiguration = .follow(max: 5, allowCycles: false),
    readTimeout: TimeAmount? = nil,
    connectTimeout: TimeAmount = .seconds(30),
    _ body: (HTTPClient) async throws -> Result
) async throws -> Result {
    var configuration = HTTPClient.Configuration(redirectConfiguration: redirects)
    configuration.timeout = HTTPClient.Configuration.Timeout(connect: connectTimeout, read: readTimeout)
    configuration.decompression = .disabled
    let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    do {
        let result = try await body(client)
        try await client.shutdown()
        return result
    } catch {
        try? await client.shutdown()
        throw error
    }
}

extension HTTPClient {
    /// Fetches `url` and collects the body. The deadline only catches hangs: it is generous because the suite's
    /// CPU-bound tests can hold both cooperative threads of a 2-core machine for seconds, delaying this task (not the
    /// server) from reading its response.
    func fetch(
        _ url: String, method: HTTPMethod = .GET, headers: [(String, String)] = [], timeout: TimeAmount = .seconds(120)
    ) async throws -> Fetched {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await execute(request, timeout: timeout)
        var body: [UInt8] = []
        var parts = 0
        for try await part in response.body {
            body += part.readableBytesView
            parts += 1
        }
        return Fetched(status: Int(response.status.code), headers: response.headers, body: body, parts: parts)
    }
}
