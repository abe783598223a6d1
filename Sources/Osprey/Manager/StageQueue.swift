public import FoundationEssentials
import Synchronization

/// One of the manager's work stages — decoding or processing — as a queue a caller can hold and watch, as Nuke's
/// pipeline queues can be: while ``isSuspended``, no new operation of the stage starts (those running finish), and
/// ``events()`` reports each operation as it waits, starts and finishes. A test holds every load at a stage and releases it
/// when it has checked what it wanted; an application pauses decoding while it scrolls.
///
/// ```swift
/// manager.decodingQueue.isSuspended = true
/// let events = manager.decodingQueue.events()
/// let load = Task { try await manager.image(for: url) }   // downloads, then waits to decode
/// manager.decodingQueue.isSuspended = false                // decodes now
/// ```
///
/// A load cancelled while it waits leaves without running the stage.
public final class StageQueue: Sendable {
    /// What a stage reports about its operations.
    public enum Event: Sendable, Equatable {
        /// An operation for the image at `url` waits, because the stage is suspended.
        case waiting(URL)
        /// An operation for the image at `url` started.
        case started(URL)
        /// The operation for the image at `url` finished (successfully or not).
        case finished(URL)
    }

    /// The stage's name: `decoding` or `processing`.
    public let name: String
    private let state = Mutex(State())
    private let broadcaster = EventBroadcaster<Event>()

    private struct State {
        var isSuspended = false
        var running = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    init(name: String) {
        self.name = name
    }

    /// Whether new operations wait; setting it to `false` lets the waiting ones start.
    public var isSuspended: Bool {
        get { state.withLock { $0.isSuspended } }
        set {
            let waiters = state.withLock { state in
                state.isSuspended = newValue
                guard !newValue else { return [CheckedContinuation<Void, Never>]() }
                defer { state.waiters = [:] }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// How many operations of the stage are running now.
    public var runningCount: Int { state.withLock { $0.running } }

    /// How many loads wait for the stage to be resumed.
    public var waitingCount: Int { state.withLock { $0.waiters.count } }

    /// The stage's events from now on, until the manager is released.
    public func events() -> AsyncStream<Event> {
        broadcaster.subscribe()
    }

    /// Runs `body` as one operation of the stage for the image at `url`, once the stage is not suspended; `nil`
    /// when the calling task is cancelled while it waits, or when `skips` says, once it may start, that the
    /// operation is no longer needed (it then neither starts nor finishes).
    func run<Result: Sendable>(
        for url: URL, skipping skips: () -> Bool = { false }, _ body: () async -> Result
    ) async -> Result? {
        guard await waitUntilResumed(url), !skips() else { return nil }
        state.withLock { $0.running += 1 }
        broadcaster.publish(.started(url))
        let result = await body()
        state.withLock { $0.running -= 1 }
        broadcaster.publish(.finished(url))
        return result
    }

    /// Returns `true` once the stage is not suspended, `false` when the calling task is cancelled first.
    private func waitUntilResumed(_ url: URL) async -> Bool {
        let number = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let runs = state.withLock { state in
                    guard state.isSuspended, !Task.isCancelled else { return true }
                    state.waiters[number] = continuation
                    return false
                }
                if runs { continuation.resume() } else { broadcaster.publish(.waiting(url)) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: number) }
            waiter?.resume()
        }
        return !Task.isCancelled
    }
}
