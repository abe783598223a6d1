import HTTPTypes
import Hummingbird
import Tracing

/// Makes a server span for each request, named after its method and route (`GET /img`), continuing the trace the
/// request's headers carry (the tracer reads them: W3C `traceparent` with OpenTelemetry's). The span is the current
/// one while the request is handled, so the pipeline's spans (cache lookups, the download, decode, processing,
/// encode) nest under it and the request to the origin carries the trace on. It ends when the response is made,
/// before its bytes are written. In an application that makes its own request spans (Hummingbird's
/// `TracingMiddleware` before the proxy's routes), the pipeline's spans nest under the application's and none is
/// made here.
struct RequestTracingMiddleware<Context: RequestContext>: RouterMiddleware {
    let tracer: any Tracer

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard InstrumentationContext.current == nil else { return try await next(request, context) }
        var parent = InstrumentationContext.topLevel
        tracer.extract(request.headers, into: &parent, using: HeaderExtractor())
        let method = request.method.rawValue
        let span = tracer.startSpan(method, context: parent, ofKind: .server)
        defer { span.end() }
        span.attributes["http.request.method"] = method
        span.attributes["url.path"] = request.uri.path
        if let query = request.uri.query { span.attributes["url.query"] = query }
        if let agent = request.headers[.userAgent] { span.attributes["user_agent.original"] = agent }
        do {
            let response = try await InstrumentationContext.$current.withValue(span.context) {
                try await next(request, context)
            }
            finish(span, status: response.status.code, route: context.endpointPath, method: method)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            finish(span, status: status, route: context.endpointPath, method: method)
            span.recordError(error)
            throw error
        }
    }

    private func finish(_ span: any Span, status: Int, route: String?, method: String) {
        if let route {
            span.operationName = "\(method) \(route)"
            span.attributes["http.route"] = route
        }
        span.attributes["http.response.status_code"] = status
        // A server span fails on a server error only: a 4xx is the client's.
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
    }
}

/// Reads a trace's propagation headers from a request.
private struct HeaderExtractor: Extractor {
    func extract(key: String, from carrier: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { carrier[$0] }
    }
}
