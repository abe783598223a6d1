import NIOConcurrencyHelpers

/// Counts arrivals — each call of ``arrive()``, from whatever the code under test calls back — and lets a test await
/// a number of them, instead of polling for a state to appear.
///
/// ```swift
/// let arrivals = ArrivalCounter()
/// let budget = MemoryBudget(..., onWaiting: { _ in arrivals.arrive() })
/// let waiting = Task { try await budget.reserve(10) }
/// await arrivals.wait(for: 1)      // the reservation is waiting now
/// ```
public final class ArrivalCounter: Sendable {
    private struct State {
        var count = 0
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = NIOLockedValueBox(State())

    /// Makes a counter at zero.
    public init() {}

    /// How many arrivals there have been.
    public var count: Int { state.withLockedValue { $0.count } }

    /// Counts one arrival, and wakes the waits it completes.
    public func arrive() {
        let ready = state.withLockedValue { state in
            state.count += 1
            let count = state.count
            defer { state.waiters.removeAll { $0.count <= count } }
            return state.waiters.filter { $0.count <= count }.map(\.continuation)
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once there have been `count` arrivals.
    public func wait(for count: Int) async {
        await withCheckedContinuation { continuation in
            let isReady = state.withLockedValue { state in
                guard state.count < count else { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if isReady { continuation.resume() }
        }
    }
}
