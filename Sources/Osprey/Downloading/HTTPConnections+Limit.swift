import Synchronization

// The per-origin limit of HTTPConnections (``HTTPConnections/connectionsPerOrigin``): a place is taken before a
// connection opens and given back when it closes; a transfer that finds none waits, in order, for one to free or for
// a connection to come back idle.
extension HTTPConnections {
    /// Takes a place among `origin`'s connections (`true`), waiting for one when it has all it may have; `false` when
    /// one of them came back idle meanwhile, to be taken instead.
    func reserve(_ origin: Origin) async throws -> Bool {
        guard let limit = connectionsPerOrigin else { return true }
        while true {
            let id = state.withLock { state -> Int? in
                if state.counts[origin, default: 0] < limit {
                    state.counts[origin, default: 0] += 1
                    return nil
                }
                state.nextWaiter += 1
                return state.nextWaiter
            }
            guard let id else { return true }
            // Woken when a connection comes back idle or closes: then an idle one or a place may be free.
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let shutDown = state.withLock { state -> Bool in
                        guard !state.isShutDown else { return true }
                        state.waiting[origin, default: []].append((id, continuation))
                        return false
                    }
                    if shutDown { continuation.resume(throwing: DownloadError.shutDown) }
                }
            } onCancel: {
                let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                    guard let index = state.waiting[origin]?.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiting[origin]?.remove(at: index).continuation
                }
                waiter?.resume(throwing: CancellationError())
            }
            if state.withLock({ $0.idle[origin]?.isEmpty == false }) { return false }
        }
    }

    func unreserve(_ origin: Origin) {
        state.withLock { Self.unreserve(origin, in: &$0) }
    }

    static func unreserve(_ origin: HTTPConnections.Origin, in state: inout State) {
        guard let count = state.counts[origin] else { return }
        state.counts[origin] = count > 1 ? count - 1 : nil
        wakeOne(waitingFor: origin, in: &state)
    }

    static func wakeOne(waitingFor origin: Origin, in state: inout State) {
        guard var waiting = state.waiting[origin], !waiting.isEmpty else { return }
        let waiter = waiting.removeFirst()
        state.waiting[origin] = waiting.isEmpty ? nil : waiting
        waiter.continuation.resume()
    }
}
