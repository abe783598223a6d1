import Synchronization

/// Hands each event to every current subscriber's `AsyncStream`: the event streams of the disk cache and the
/// downloader. A slow subscriber keeps the newest 1,024 events; one that stops listening is forgotten.
final class EventBroadcaster<Event: Sendable>: Sendable {
    private struct State {
        var subscribers: [Int: AsyncStream<Event>.Continuation] = [:]
        var nextSubscriber = 0
        var isFinished = false
    }

    private let state = Mutex(State())

    /// A stream of the events published from now until ``finish()`` or until its consumer stops.
    func subscribe() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let id = state.withLock { state -> Int? in
            guard !state.isFinished else { return nil }
            defer { state.nextSubscriber += 1 }
            state.subscribers[state.nextSubscriber] = continuation
            return state.nextSubscriber
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Sends `event` to every subscriber.
    func publish(_ event: Event) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.yield(event) }
    }

    /// Ends every stream; later subscribers get an empty one.
    func finish() {
        let subscribers = state.withLock { state in
            state.isFinished = true
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }
}
