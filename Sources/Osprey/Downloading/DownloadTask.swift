import Synchronization

/// One caller's share of an ``ImageDownloader`` download: wait for it, reprioritise it, or leave it.
///
/// ```swift
/// let task = downloader.download(request, progress: nil)
/// task.setPriority(.veryHigh)
/// let response = try await task.response
/// ```
public final class DownloadTask: DataLoadingTask {
    private struct State {
        var outcome: Result<DownloadResponse, DownloadError>?
        var waiters: [CheckedContinuation<Result<DownloadResponse, DownloadError>, Never>] = []
        var priority: DownloadPriority
    }

    private let state: Mutex<State>
    private let leave: @Sendable (DownloadTask) -> Void
    private let reprioritise: @Sendable (DownloadTask, DownloadPriority) -> Void

    init(
        priority: DownloadPriority,
        leave: @escaping @Sendable (DownloadTask) -> Void,
        reprioritise: @escaping @Sendable (DownloadTask, DownloadPriority) -> Void
    ) {
        self.state = Mutex(State(priority: priority))
        self.leave = leave
        self.reprioritise = reprioritise
    }

    /// The response, once the transfer has ended: awaits it; throws its ``DownloadError``, or
    /// ``DownloadError/cancelled`` when the calling task is cancelled (the caller then leaves the transfer).
    public var response: DownloadResponse {
        get async throws(DownloadError) {
            let outcome = await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let outcome = state.withLock { state in
                        if state.outcome == nil { state.waiters.append(continuation) }
                        return state.outcome
                    }
                    if let outcome { continuation.resume(returning: outcome) }
                }
            } onCancel: {
                cancel()
            }
            return try outcome.get()
        }
    }

    /// A task that failed before it could be queued (an unusable URL, a downloader shut down).
    convenience init(priority: DownloadPriority, failure: DownloadError) {
        self.init(priority: priority, leave: { _ in }, reprioritise: { _, _ in })
        complete(.failure(failure))
    }

    /// The outcome if the download is over, without waiting.
    public var outcome: Result<DownloadResponse, DownloadError>? { state.withLock { $0.outcome } }

    /// The caller's priority; the transfer runs at the highest of its callers'.
    public var priority: DownloadPriority { state.withLock { $0.priority } }

    /// Changes the caller's priority: a queued transfer moves in the queue.
    public func setPriority(_ priority: DownloadPriority) {
        let changed = state.withLock { state in
            guard state.outcome == nil, state.priority != priority else { return false }
            state.priority = priority
            return true
        }
        if changed { reprioritise(self, priority) }
    }

    /// Leaves the transfer: this caller gets ``DownloadError/cancelled``; the transfer stops when no caller is left
    /// (unless it is detached).
    public func cancel() {
        guard state.withLock({ $0.outcome == nil }) else { return }
        leave(self)
    }

    /// Delivers the outcome, once; later calls do nothing. Returns whether this call delivered it.
    @discardableResult
    func complete(_ outcome: Result<DownloadResponse, DownloadError>) -> Bool {
        let waiters = state.withLock {
            state -> [CheckedContinuation<Result<DownloadResponse, DownloadError>, Never>]? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume(returning: outcome) }
        return true
    }
}
