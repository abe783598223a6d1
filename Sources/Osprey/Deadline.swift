/// Runs `operation` until it returns or `limit` passes on `clock`, whichever is first: then `operation` is
/// cancelled and `overtime` is returned. For the downloader's whole-download deadline and the proxy's render limit;
/// tests pass a clock they move themselves.
package func withDeadline<Value: Sendable>(
    _ limit: Duration, clock: any Clock<Duration> = ContinuousClock(), overtime: Value,
    _ operation: @escaping @Sendable () async -> Value
) async -> Value {
    await withTaskGroup(of: Value?.self) { group in
        group.addTask { await operation() }
        group.addTask {
            do {
                try await clock.sleep(for: limit)
                return overtime
            } catch {
                return nil  // The operation ended first.
            }
        }
        defer { group.cancelAll() }
        while let next = await group.next() {
            if let next { return next }
        }
        return overtime
    }
}
