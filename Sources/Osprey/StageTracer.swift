import Tracing

/// Makes the spans of the pipeline's stages (cache lookups, downloads, decodes, processing, encodes, disk writes) with
/// the tracer a manager or downloader was configured with, else the one the process bootstrapped with
/// `InstrumentationSystem.bootstrap`. With neither it makes no span, and a stage pays one branch for it.
struct StageTracer: Sendable {
    /// The tracer spans go to; `nil` when there is none.
    let tracer: (any Tracer)?

    init(_ configured: (any Tracer)?) {
        if let configured {
            tracer = configured
        } else {
            let bootstrapped = InstrumentationSystem.tracer
            tracer = bootstrapped is NoOpTracer ? nil : bootstrapped
        }
    }

    /// Runs `body` in a span named `name`, a child of `context` (the task's current span by default). While `body`
    /// runs the span is the task's current one, so spans started inside it — on other threads of the same task
    /// too — nest under it. It ends when `body` returns; an error thrown is recorded on it.
    nonisolated(nonsending) func withSpan<T, E: Error>(
        _ name: String, context: InstrumentationContext? = nil, ofKind kind: SpanKind = .internal,
        _ body: (StageSpan) async throws(E) -> T
    ) async throws(E) -> T {
        guard let tracer else { return try await body(StageSpan(nil)) }
        let span = tracer.startSpan(name, context: context ?? .current ?? .topLevel, ofKind: kind)
        defer { span.end() }
        let outcome: Result<T, E> = await InstrumentationContext.$current.withValue(span.context) {
            do throws(E) {
                return .success(try await body(StageSpan(span)))
            } catch {
                return .failure(error)
            }
        }
        if case .failure(let error) = outcome { StageSpan(span).fail(error) }
        return try outcome.get()
    }
}

/// A stage's span, or nothing when there is no tracer: what a stage records about itself.
struct StageSpan: Sendable {
    let span: (any Span)?

    init(_ span: (any Span)?) { self.span = span }

    /// Sets attribute `key` to `value`, which is not computed when there is no span.
    func set<Value: SpanAttributeConvertible>(_ key: String, _ value: @autoclosure () -> Value) {
        span?.attributes[key] = value().toSpanAttribute()
    }

    /// Marks the stage failed with `error`.
    func fail(_ error: any Error) {
        guard let span else { return }
        span.recordError(error)
        span.setStatus(SpanStatus(code: .error))
    }

    /// Marks the stage failed when `outcome` is a failure; returns `outcome`.
    @discardableResult
    func record<T, E: Error>(_ outcome: Result<T, E>) -> Result<T, E> {
        if case .failure(let error) = outcome { fail(error) }
        return outcome
    }
}
