import OspreyCodecs
import Synchronization

/// Memory for decoding, handed out by prediction: before a manager decodes an image it reserves what the header says
/// the decode and the processing will take (`ImageDecoder.memoryEstimate(for:options:)`), and waits while the
/// reservations under way leave too little. A burst of large images then waits its turn instead of taking the
/// machine's memory; a request that alone needs more than the budget is refused at once.
///
/// ```swift
/// var configuration = ImageManager.Configuration()
/// configuration.memoryBudget = MemoryBudget(bytes: 1 << 30, maxWaiting: 64, maxWait: .seconds(10))
/// ```
///
/// Waiters are served first come, first served. The pixel pool's recycled buffers (`PixelBuffer.recycledByteCount`)
/// count against the budget; a reservation that needs their room has them given back first. The reservations are
/// predictions, not measurements: what a decode really allocates is still bounded by the decoder's limits.
///
/// ``shared``, every manager's by default, holds half the memory available to the process (the cgroup's limit, else
/// the machine's physical memory).
public final class MemoryBudget: Sendable {
    /// Why a reservation was not granted.
    public enum Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        /// The reservation alone needs more than the whole budget: it would never be granted.
        case exceedsBudget(required: Int, budget: Int)
        /// ``maxWaiting`` reservations were waiting already.
        case queueFull(waiting: Int)
        /// The wait passed ``maxWait``.
        case timedOut(after: Duration)
        /// The waiting task was cancelled.
        case cancelled

        /// What went wrong, in a sentence for logs and error messages.
        public var description: String {
            switch self {
            case .exceedsBudget(let required, let budget):
                "decoding needs about \(required) bytes, more than the memory budget of \(budget)"
            case .queueFull(let waiting): "\(waiting) decodes already wait for memory"
            case .timedOut(let after): "no memory for decoding within \(after)"
            case .cancelled: "cancelled while waiting for memory"
            }
        }
    }

    /// Memory granted to one decode; given back by ``release()``, or when the last reference goes.
    public final class Reservation: Sendable {
        /// The bytes reserved.
        public let bytes: Int
        private let budget: MemoryBudget
        private let isReleased = Atomic(false)

        init(bytes: Int, budget: MemoryBudget) {
            self.bytes = bytes
            self.budget = budget
        }

        /// Gives the memory back; later calls do nothing.
        public func release() {
            guard !isReleased.exchange(true, ordering: .acquiringAndReleasing) else { return }
            budget.release(bytes)
        }

        deinit { release() }
    }

    /// A reading of the budget, for metrics.
    public struct Usage: Sendable, Hashable {
        /// The budget, in bytes.
        public var capacity: Int
        /// Bytes reserved now.
        public var reserved: Int
        /// Reservations waiting.
        public var waiting: Int
    }

    typealias Machine = MemoryBudgetStateMachine
    typealias Continuation = CheckedContinuation<Result<Void, Refusal>, Never>
    /// Granted waiters to wake, and whether held memory must be given back first.
    typealias Wakeup = (continuations: [Continuation], reclaims: Bool)

    private struct State {
        var machine: Machine
        var nextID: Machine.WaiterID = 0
        var continuations: [Machine.WaiterID: Continuation] = [:]
        /// The reservations inside ``MemoryBudget/reserve(_:)`` now.
        var live: Set<Machine.WaiterID> = []
        /// Live reservations cancelled (or timed out) before their continuation was registered.
        var abandoned: [Machine.WaiterID: Refusal] = [:]
    }

    /// The most reservations that may wait; more are refused with ``Refusal/queueFull(waiting:)``.
    public let maxWaiting: Int
    /// How long a reservation may wait before it is refused with ``Refusal/timedOut(after:)``; `nil` for as long as
    /// it takes.
    public let maxWait: Duration?
    private let state: Mutex<State>
    private let held: @Sendable () -> Int
    private let reclaim: @Sendable () -> Void
    private let sleep: @Sendable (Duration) async throws -> Void
    /// Told the number of waiters each time one starts waiting (tests await it instead of polling).
    private let onWaiting: (@Sendable (Int) -> Void)?

    /// Makes a budget of `bytes`, with at most `maxWaiting` reservations waiting (unbounded by default), each for at
    /// most `maxWait` (as long as it takes by default).
    public convenience init(bytes: Int, maxWaiting: Int = .max, maxWait: Duration? = nil) {
        self.init(bytes: bytes, maxWaiting: maxWaiting, maxWait: maxWait, held: { PixelBuffer.recycledByteCount })
    }

    /// A budget whose held memory, its release and its clock are the caller's (tests).
    init(
        bytes: Int, maxWaiting: Int, maxWait: Duration?, held: @escaping @Sendable () -> Int,
        reclaim: @escaping @Sendable () -> Void = { PixelBuffer.releaseRecycledMemory() },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await ContinuousClock().sleep(for: $0) },
        onWaiting: (@Sendable (Int) -> Void)? = nil
    ) {
        self.maxWaiting = maxWaiting
        self.maxWait = maxWait
        self.state = Mutex(State(machine: Machine(capacity: bytes, maxWaiting: maxWaiting)))
        self.held = held
        self.reclaim = reclaim
        self.sleep = sleep
        self.onWaiting = onWaiting
    }

    /// Every manager's budget unless its configuration names another: half the memory available to the process.
    public static let shared = MemoryBudget(bytes: defaultCapacity)

    /// Half the memory available to the process (its cgroup's limit, else the machine's physical memory), at least
    /// 256 MiB; 1 GiB where neither can be read.
    public static var defaultCapacity: Int {
        guard let memory = SystemMemory.current() else { return 1 << 30 }
        return max(memory.limit / 2, 256 << 20)
    }

    /// The budget in bytes. Lowering it cancels nothing granted; waiters that can no longer ever fit are refused.
    public var capacity: Int {
        get { state.withLock { $0.machine.capacity } }
        set {
            let (wakeup, refused) = state.withLock { state -> (Wakeup, [(Continuation, Refusal)]) in
                let (grants, refused) = state.machine.setCapacity(newValue, held: held())
                let capacity = state.machine.capacity
                return (
                    take(grants, from: &state),
                    refused.compactMap { waiter in
                        state.continuations.removeValue(forKey: waiter.id).map {
                            ($0, Refusal.exceedsBudget(required: waiter.bytes, budget: capacity))
                        }
                    }
                )
            }
            resume(wakeup)
            for (continuation, refusal) in refused { continuation.resume(returning: .failure(refusal)) }
        }
    }

    /// What is reserved and waiting now.
    public var usage: Usage {
        state.withLock {
            Usage(capacity: $0.machine.capacity, reserved: $0.machine.reserved, waiting: $0.machine.waiters.count)
        }
    }

    /// Reserves `bytes`, waiting first come, first served while too little is free.
    ///
    /// - Throws: ``Refusal``: at once when `bytes` exceed the whole budget or too many wait; after ``maxWait``; or
    ///   when the calling task is cancelled while it waits.
    public func reserve(_ bytes: Int) async throws(Refusal) -> Reservation {
        // The common case, without suspending: nobody waits and the bytes fit.
        if let reservation = reserveIfFree(bytes) { return reservation }
        let id = state.withLock { state in
            state.nextID += 1
            state.live.insert(state.nextID)
            return state.nextID
        }
        let timer = maxWait.map { limit in
            Task { [weak self] in
                guard (try? await self?.sleep(limit)) != nil else { return }
                self?.abandon(id, because: .timedOut(after: limit))
            }
        }
        defer { timer?.cancel() }
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Continuation) in
                enum Decision {
                    case decided(Result<Void, Refusal>, reclaims: Bool)
                    case waits(behind: Int)
                }
                let decision = state.withLock { state -> Decision in
                    if let refusal = state.abandoned.removeValue(forKey: id) {
                        return .decided(.failure(refusal), reclaims: false)
                    }
                    switch state.machine.reserve(bytes, id: id, held: held()) {
                    case .granted(let reclaims):
                        return .decided(.success(()), reclaims: reclaims)
                    case .refused(.exceedsBudget):
                        let refusal = Refusal.exceedsBudget(required: bytes, budget: state.machine.capacity)
                        return .decided(.failure(refusal), reclaims: false)
                    case .refused(.queueFull):
                        return .decided(.failure(.queueFull(waiting: state.machine.waiters.count)), reclaims: false)
                    case .waits:
                        state.continuations[id] = continuation
                        return .waits(behind: state.machine.waiters.count)
                    }
                }
                switch decision {
                case .waits(let count):
                    onWaiting?(count)
                case .decided(let result, let reclaims):
                    if reclaims { reclaim() }
                    continuation.resume(returning: result)
                }
            }
        } onCancel: {
            abandon(id, because: .cancelled)
        }
        // A cancellation or timeout that came after the grant may have left a mark; later ones leave none.
        state.withLock { state in
            state.live.remove(id)
            state.abandoned[id] = nil
        }
        try outcome.get()
        return Reservation(bytes: max(bytes, 0), budget: self)
    }

    /// Reserves `bytes` if they are free now, without waiting or queueing; `nil` otherwise.
    public func reserveIfFree(_ bytes: Int) -> Reservation? {
        let granted = state.withLock { state -> Bool? in
            // Only when nobody waits: a waiter comes first.
            guard state.machine.waiters.isEmpty else { return nil }
            state.nextID += 1
            switch state.machine.reserve(bytes, id: state.nextID, held: held()) {
            case .granted(let reclaims): return reclaims
            case .waits:
                _ = state.machine.cancel(state.nextID, held: 0)
                return nil
            case .refused: return nil
            }
        }
        guard let reclaims = granted else { return nil }
        if reclaims { reclaim() }
        return Reservation(bytes: max(bytes, 0), budget: self)
    }

    // MARK: Performing the machine's decisions

    private func release(_ bytes: Int) {
        let wakeup = state.withLock { state in take(state.machine.release(bytes, held: held()), from: &state) }
        resume(wakeup)
    }

    /// Ends the wait of `id` with `refusal` (cancelled, timed out); a waiter not yet registered finds the mark.
    private func abandon(_ id: Machine.WaiterID, because refusal: Refusal) {
        let (continuation, wakeup) = state.withLock { state -> (Continuation?, Wakeup) in
            let (wasWaiting, grants) = state.machine.cancel(id, held: held())
            guard wasWaiting else {
                // Not yet registered: leave a mark for it to find. (Granted already: nothing to do; the mark is
                // removed when its reserve returns.)
                if state.live.contains(id) { state.abandoned[id] = refusal }
                return (nil, take(grants, from: &state))
            }
            return (state.continuations.removeValue(forKey: id), take(grants, from: &state))
        }
        continuation?.resume(returning: .failure(refusal))
        resume(wakeup)
    }

    /// The continuations of `grants`, taken out of `state`, and whether any needs held memory given back.
    private func take(_ grants: [Machine.Grant], from state: inout State) -> Wakeup {
        (grants.compactMap { state.continuations.removeValue(forKey: $0.id) }, grants.contains { $0.reclaims })
    }

    /// Gives held memory back when a grant needs it, then wakes the granted waiters: never under the lock.
    private func resume(_ wakeup: Wakeup) {
        if wakeup.reclaims { reclaim() }
        for continuation in wakeup.continuations { continuation.resume(returning: .success(())) }
    }
}
