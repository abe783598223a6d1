/// The bookkeeping of a ``MemoryBudget``, as a pure state machine: reservations in, grants and refusals out, no
/// locks, no continuations, no clocks. ``MemoryBudget`` keeps one behind its lock and performs what it decides.
///
/// Invariants, checked by the tests after every event:
/// - `reserved` never exceeds `capacity`, and is the sum of the reservations granted and not yet released;
/// - waiters are granted in the order they came (first in, first out), so a large reservation is never overtaken
///   for ever by small ones; nobody waits while the first waiter would fit;
/// - at most `maxWaiting` wait.
///
/// `held` is memory the process keeps outside any reservation that it can give back on demand (the pixel pool's
/// recycled buffers): it counts against the budget, and a grant that needs it says `reclaims`, for the caller to give
/// it back before the memory is used.
struct MemoryBudgetStateMachine {
    typealias WaiterID = UInt64

    /// Why a reservation is refused.
    enum Refusal: Equatable {
        /// The reservation alone is larger than the budget.
        case exceedsBudget
        /// `maxWaiting` reservations wait already.
        case queueFull
    }

    /// What a reservation gets at once.
    enum Decision: Equatable {
        /// Granted: `reclaims` when held memory must be given back first.
        case granted(reclaims: Bool)
        /// Queued behind others, or until memory is released.
        case waits
        case refused(Refusal)
    }

    /// A waiter granted by a release, a cancellation or a larger capacity.
    struct Grant: Equatable {
        let id: WaiterID
        let reclaims: Bool
    }

    private(set) var capacity: Int
    let maxWaiting: Int
    /// Bytes granted and not released.
    private(set) var reserved = 0
    /// Waiting reservations, first come first.
    private(set) var waiters: [(id: WaiterID, bytes: Int)] = []

    init(capacity: Int, maxWaiting: Int) {
        self.capacity = max(capacity, 0)
        self.maxWaiting = max(maxWaiting, 0)
    }

    /// A reservation of `bytes` by `id`, with `held` bytes kept outside reservations.
    mutating func reserve(_ bytes: Int, id: WaiterID, held: Int) -> Decision {
        let bytes = max(bytes, 0)
        guard bytes <= capacity else { return .refused(.exceedsBudget) }
        if waiters.isEmpty, let reclaims = fit(bytes, held: held) {
            reserved += bytes
            return .granted(reclaims: reclaims)
        }
        guard waiters.count < maxWaiting else { return .refused(.queueFull) }
        waiters.append((id, bytes))
        return .waits
    }

    /// `bytes` given back; returns the waiters that now fit, in order.
    mutating func release(_ bytes: Int, held: Int) -> [Grant] {
        reserved = max(reserved - max(bytes, 0), 0)
        return grantWaiters(held: held)
    }

    /// `id` stops waiting (cancelled, timed out). Returns whether it was waiting, and the waiters that fit now that
    /// it no longer stands before them.
    mutating func cancel(_ id: WaiterID, held: Int) -> (wasWaiting: Bool, grants: [Grant]) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return (false, []) }
        waiters.remove(at: index)
        return (true, index == 0 ? grantWaiters(held: held) : [])
    }

    /// A new capacity: waiters that now fit are granted; those that can never fit are refused.
    mutating func setCapacity(
        _ newCapacity: Int, held: Int
    ) -> (grants: [Grant], refused: [(id: WaiterID, bytes: Int)]) {
        capacity = max(newCapacity, 0)
        let refused = waiters.filter { $0.bytes > capacity }
        waiters.removeAll { $0.bytes > capacity }
        return (grantWaiters(held: held), refused)
    }

    /// Whether `bytes` fit now: `false` (reclaim nothing) when they fit beside what is held, `true` when only if it
    /// is given back, `nil` when not even then.
    private func fit(_ bytes: Int, held: Int) -> Bool? {
        let free = capacity - reserved
        if bytes <= free - max(held, 0) { return false }
        if bytes <= free { return true }
        return nil
    }

    private mutating func grantWaiters(held: Int) -> [Grant] {
        var grants: [Grant] = []
        var held = held
        while let first = waiters.first, let reclaims = fit(first.bytes, held: held) {
            waiters.removeFirst()
            reserved += first.bytes
            grants.append(Grant(id: first.id, reclaims: reclaims))
            if reclaims { held = 0 }
        }
        return grants
    }
}
