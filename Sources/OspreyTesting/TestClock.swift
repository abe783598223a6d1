import NIOConcurrencyHelpers

/// A `Clock` that moves only when a test tells it to, so that timeouts, expiry and retry delays are tested without
/// sleeping.
///
/// ```swift
/// let clock = TestClock()
/// async let woke: Void = clock.sleep(for: .seconds(5))
/// await clock.waitForSleepers(count: 1)
/// clock.advance(by: .seconds(5))   // the sleeper resumes now
/// ```
public final class TestClock: Clock, Sendable {
    /// A point on a ``TestClock``: the time elapsed since the clock was made.
    public struct Instant: InstantProtocol, Sendable {
        /// Time since the clock's start.
        public let offset: Duration

        /// Makes an instant `offset` after the clock's start.
        public init(offset: Duration) {
            self.offset = offset
        }

        /// The instant `duration` after this one.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// How long from this instant to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Whether `lhs` comes before `rhs`.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let id: Int
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Sleeper] = []
        var nextID = 0
        var sleeperWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = NIOLockedValueBox(State())

    /// Makes a clock at offset zero.
    public init() {}

    /// The current instant; moves only through ``advance(by:)`` and ``advance(to:)``.
    public var now: Instant { state.withLockedValue { $0.now } }

    /// Zero: the clock has no resolution of its own.
    public var minimumResolution: Duration { .zero }

    /// How many tasks are sleeping on this clock now.
    public var sleeperCount: Int { state.withLockedValue { $0.sleepers.count } }

    /// Suspends until the clock reaches `deadline`; returns at once if it already has.
    ///
    /// - Throws: `CancellationError` when the task is cancelled first.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = state.withLockedValue { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resumeNow, satisfied) = state.withLockedValue {
                    state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if deadline <= state.now { return (true, []) }
                    if Task.isCancelled { return (true, []) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return (false, Self.takeSatisfiedWaiters(&state))
                }
                for waiter in satisfied { waiter.resume() }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLockedValue { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// Moves the clock forward by `duration` and wakes every sleeper whose deadline has come, earliest first.
    public func advance(by duration: Duration) {
        let target = now.advanced(by: duration)
        advance(to: target)
    }

    /// Moves the clock to `instant` (never backwards) and wakes every sleeper whose deadline has come, earliest
    /// first.
    public func advance(to instant: Instant) {
        let due = state.withLockedValue { state -> [Sleeper] in
            state.now = max(state.now, instant)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Returns once at least `count` tasks are sleeping on this clock: the way to know the code under test has
    /// reached its sleep before advancing the clock.
    public func waitForSleepers(count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLockedValue { state in
                if state.sleepers.count >= count { return true }
                state.sleeperWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private static func takeSatisfiedWaiters(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let count = state.sleepers.count
        let satisfied = state.sleeperWaiters.filter { $0.count <= count }.map(\.continuation)
        state.sleeperWaiters.removeAll { $0.count <= count }
        return satisfied
    }
}
