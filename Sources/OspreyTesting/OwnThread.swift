import Foundation

/// Runs `body` on a thread of its own and returns its result: for a test that keeps a core busy for seconds (decoding
/// the whole corpus, running hundreds of processes), so that it does not hold one of Swift's cooperative threads —
/// two on a two-core machine — while the tests beside it wait for theirs.
public func onOwnThread<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Swift.Result { try body() }) }
        thread.stackSize = 8 << 20
        thread.start()
    }
}
