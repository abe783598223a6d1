import Dispatch
import Synchronization

/// One load started by an ``ImageManager``: cancel it, change its priority, or (from
/// ``ImageManager/task(for:)``) follow its ``events``.
///
/// ```swift
/// let task = manager.task(for: try ImageRequest(string: url, options: [.progressiveDownload]))
/// for await event in task.events {
///     switch event {
///     case .progress(let progress): print(progress.receivedBytes, progress.expectedBytes ?? -1)
///     case .preview(let partial): show(partial.image)
///     case .finished(let result): show(try result.get().image)
///     }
/// }
/// ```
///
/// A task ends exactly once: with its final result, or when cancelled. A cancelled task delivers one final outcome,
/// ``ImageError/cancelled`` — the completion of the callback form is called with it, the events stream ends with
/// `.finished(.failure(.cancelled))`, the async form throws it — and nothing after it, as SDWebImage, Kingfisher and
/// Nuke do: code that waits for its completion never waits forever.
public final class ImageTask: Sendable {
    /// What a task reports, in order: any number of progress reports and previews, then one `finished`.
    public enum Event: Sendable {
        /// Bytes received so far and expected.
        case progress(DownloadProgress)
        /// An image that is not final (``ImageResult/isFinal`` is `false`): a progressive partial image, or the
        /// cached image a ``ImageRequest/Options/refreshCached`` load delivers before asking the origin.
        case preview(ImageResult)
        /// The outcome: ``ImageError/cancelled`` after ``cancel()``. Under `refreshCached`, an unchanged image (304,
        /// or the same bytes) finishes with the cached result again (its ``ImageResult/cacheType`` says where from);
        /// a changed one with the new image, ``CacheType/notCached``.
        case finished(Result<ImageResult, ImageError>)
    }

    /// Where a task's deliveries go.
    enum Sink: Sendable {
        /// The callback form: each call dispatched to `queue`, in order.
        case callbacks(Callbacks)
        /// The event-stream form.
        case stream(AsyncStream<Event>.Continuation)
        /// The async form: the final outcome resumes a waiting caller (set by ``wait(start:)``).
        case waiter
    }

    struct Callbacks: Sendable {
        let queue: DispatchQueue
        let progress: (@Sendable (DownloadProgress) -> Void)?
        let preview: (@Sendable (ImageResult) -> Void)?
        let completion: @Sendable (Result<ImageResult, ImageError>) -> Void
    }

    private enum Phase {
        case running
        case finished
        case cancelled
    }

    /// Where the task stands in its delivery; which job it subscribes to, and at what priority, is the manager's.
    private struct State {
        var phase = Phase.running
        var waiter: CheckedContinuation<Result<ImageResult, ImageError>, Never>?
        /// The outcome, when it came before the async caller started waiting.
        var outcome: Result<ImageResult, ImageError>?
    }

    /// What was asked for.
    public let request: ImageRequest
    /// What the task reports, in order, ending with its one `finished` event. For a task made by
    /// ``ImageManager/task(for:)`` it is the load's only output, and ending its iteration early cancels the load.
    /// For a callback load it mirrors the callbacks — the same events in the same order, yielded on the callback
    /// queue — and keeps only the newest 16 events nobody has read yet, so that an unread stream holds no download
    /// in memory; ending its iteration leaves the load alone.
    public let events: AsyncStream<Event>
    /// Where a callback load's ``events`` are yielded; `nil` for the other forms.
    private let mirror: AsyncStream<Event>.Continuation?
    /// The load's number in its manager's table.
    let id: Int
    private let sink: Sink
    private let state = Mutex(State())
    /// Read by the manager under its own lock, so it is an atomic rather than part of `state` (no lock is ever taken
    /// inside another).
    private let currentPriority: Atomic<Int>
    /// Told when the task is cancelled, changes priority or ends; `nil` for a task that never reaches one.
    private weak let manager: ImageManager?

    init(id: Int, request: ImageRequest, sink: Sink, events: AsyncStream<Event>? = nil, manager: ImageManager?) {
        self.id = id
        self.request = request
        self.sink = sink
        self.manager = manager
        self.currentPriority = Atomic(request.priority.rawValue)
        if let events {
            self.events = events
            self.mirror = nil
        } else if case .callbacks = sink {
            let (events, mirror) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(16))
            self.events = events
            self.mirror = mirror
        } else {
            self.events = AsyncStream { $0.finish() }
            self.mirror = nil
        }
    }

    // MARK: Controlling

    /// The priority its download runs at; a shared download runs at the highest of its callers'.
    public var priority: DownloadPriority { DownloadPriority(rawValue: currentPriority.load(ordering: .acquiring))! }

    /// Changes the download's priority, queued or running (the prefetcher's hand-over uses it).
    public func setPriority(_ priority: DownloadPriority) {
        guard !isFinished else { return }
        let old = currentPriority.exchange(priority.rawValue, ordering: .acquiringAndReleasing)
        if old != priority.rawValue { manager?.taskPriorityChanged(self) }
    }

    /// Whether ``cancel()`` was called before the task ended.
    public var isCancelled: Bool { state.withLock { $0.phase == .cancelled } }

    /// Whether the task ended: delivered its final result, or was cancelled.
    public var isFinished: Bool { state.withLock { $0.phase != .running } }

    /// Stops the load: its one final outcome is ``ImageError/cancelled`` (to the completion, on its queue, after
    /// any progress or preview already dispatched; as the stream's last event; thrown by the async form), nothing
    /// else is delivered, and the task's share of the work is released (the other callers of a shared download are
    /// not disturbed). Does nothing once the task has ended.
    public func cancel() {
        cancelIfRunning()
    }

    /// ``cancel()``, returning whether it cancelled the task (`false`: it had already ended).
    @discardableResult
    func cancelIfRunning() -> Bool {
        typealias Waiter = CheckedContinuation<Result<ImageResult, ImageError>, Never>
        let released = state.withLock { state -> Waiter?? in
            guard state.phase == .running else { return .none }
            state.phase = .cancelled
            // Under the lock, as every event of the stream: nothing can be yielded after this one.
            if case .stream(let continuation) = sink { continuation.yield(.finished(.failure(.cancelled))) }
            defer { state.waiter = nil }
            return .some(state.waiter)
        }
        guard let waiter = released else { return false }
        manager?.taskCancelled(self)
        switch sink {
        case .callbacks(let callbacks):
            callbacks.queue.async { [mirror] in
                mirror?.yield(.finished(.failure(.cancelled)))
                mirror?.finish()
                callbacks.completion(.failure(.cancelled))
            }
        case .stream(let continuation):
            continuation.finish()
        case .waiter:
            waiter?.resume(returning: .failure(.cancelled))
        }
        return true
    }

    // MARK: Delivering (called by the manager and its jobs)

    func deliver(_ event: Event) {
        switch sink {
        case .callbacks(let callbacks):
            callbacks.queue.async { self.call(callbacks, with: event) }
        case .stream(let continuation):
            // Yielded under the lock, so that no event follows the final one whichever thread delivers it.
            let isFinal = if case .finished = event { true } else { false }
            let ends = state.withLock { state in
                guard state.phase == .running else { return false }
                continuation.yield(event)
                if isFinal { state.phase = .finished }
                return isFinal
            }
            if ends {
                manager?.taskEnded(self)
                continuation.finish()
            }
        case .waiter:
            guard case .finished(let outcome) = event else { return }
            typealias Waiter = CheckedContinuation<Result<ImageResult, ImageError>, Never>
            let (ends, waiter) = state.withLock { state -> (Bool, Waiter?) in
                guard state.phase == .running else { return (false, nil) }
                state.phase = .finished
                defer { state.waiter = nil }
                if state.waiter == nil { state.outcome = outcome }
                return (true, state.waiter)
            }
            guard ends else { return }
            manager?.taskEnded(self)
            waiter?.resume(returning: outcome)
        }
    }

    /// Waits for the final outcome of a task made with the `.waiter` sink; `start` begins the load once the waiter is
    /// in place. Cancelling the calling task cancels this one.
    func wait(start: () -> Void) async -> Result<ImageResult, ImageError> {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let outcome = state.withLock { state -> Result<ImageResult, ImageError>? in
                    if state.phase == .cancelled { return .failure(.cancelled) }
                    if let outcome = state.outcome { return outcome }
                    state.waiter = continuation
                    return nil
                }
                if let outcome { continuation.resume(returning: outcome) } else { start() }
            }
        } onCancel: {
            cancel()
        }
    }

    private func call(_ callbacks: Callbacks, with event: Event) {
        switch event {
        case .progress(let progress):
            guard !isFinished else { return }
            callbacks.progress?(progress)
            mirror?.yield(event)
        case .preview(let result):
            guard !isFinished else { return }
            callbacks.preview?(result)
            mirror?.yield(event)
        case .finished(let outcome):
            // Ending here, on the callback queue, is what makes a cancel() that comes first win: its cancelled
            // completion is then the only one.
            guard endRunning() else { return }
            mirror?.yield(event)
            mirror?.finish()
            callbacks.completion(outcome)
        }
    }

    /// Moves the task from running to finished; `false` when it had already ended (cancelled).
    private func endRunning() -> Bool {
        let ends = state.withLock { state in
            guard state.phase == .running else { return false }
            state.phase = .finished
            return true
        }
        if ends { manager?.taskEnded(self) }
        return ends
    }
}

extension ImageTask: Hashable {
    /// Tasks are equal when they are the same object.
    public static func == (lhs: ImageTask, rhs: ImageTask) -> Bool { lhs === rhs }
    /// Hashes the task's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
