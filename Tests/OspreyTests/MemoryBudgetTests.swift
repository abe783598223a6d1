import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// ``MemoryBudget`` with its continuations, cancellation, time limit and held memory, on a test clock.
// Five minutes, not one: these tests take milliseconds, but in the whole suite on two cores the corpus suites' long
// synchronous decodes can hold both cooperative threads for over a minute before these get to run (one run did).
@Suite(.timeLimit(.minutes(5)))
struct MemoryBudgetTests {
    /// Held memory a test sets, and how often it was given back.
    final class Held: Sendable {
        let bytes = Atomic(0)
        let reclaims = Atomic(0)
    }

    /// What happened, in order.
    final class Log: Sendable {
        private let state = Mutex<[Int]>([])
        func append(_ entry: Int) { state.withLock { $0.append(entry) } }
        var entries: [Int] { state.withLock { $0 } }
    }

    func makeBudget(
        _ capacity: Int, maxWaiting: Int = .max, maxWait: Duration? = nil, held: Held = Held(), clock: TestClock,
        arrivals: ArrivalCounter = ArrivalCounter()
    ) -> MemoryBudget {
        MemoryBudget(
            bytes: capacity, maxWaiting: maxWaiting, maxWait: maxWait, held: { held.bytes.load(ordering: .relaxed) },
            reclaim: {
                held.bytes.store(0, ordering: .relaxed)
                held.reclaims.add(1, ordering: .relaxed)
            },
            sleep: { try await clock.sleep(for: $0) }, onWaiting: { _ in arrivals.arrive() })
    }

    @Test func waitersAreServedInOrderAsMemoryIsReleased() async throws {
        let arrivals = ArrivalCounter()
        let budget = makeBudget(100, clock: TestClock(), arrivals: arrivals)
        let first = try await budget.reserve(70)
        let order = Log()
        // 90 and 20 do not fit at once: the 20 gets its turn only when the 90 has been served and has let go, so the
        // order of the log is the order of the grants (two granted at once would log in either order).
        let second = Task {
            let reservation = try await budget.reserve(90)
            order.append(2)
            reservation.release()
        }
        await arrivals.wait(for: 1)
        let third = Task {
            let reservation = try await budget.reserve(20)
            order.append(3)
            reservation.release()
        }
        await arrivals.wait(for: 2)
        // The 20 would fit now, but waits behind the 90.
        #expect(budget.usage == MemoryBudget.Usage(capacity: 100, reserved: 70, waiting: 2))
        first.release()
        try await second.value
        try await third.value
        #expect(order.entries == [2, 3])
        #expect(budget.usage == MemoryBudget.Usage(capacity: 100, reserved: 0, waiting: 0))
    }

    @Test func whatNeverFitsAndAFullQueueAreRefusedAtOnce() async throws {
        let arrivals = ArrivalCounter()
        let budget = makeBudget(100, maxWaiting: 1, clock: TestClock(), arrivals: arrivals)
        await #expect(throws: MemoryBudget.Refusal.exceedsBudget(required: 101, budget: 100)) {
            _ = try await budget.reserve(101)
        }
        let held = try await budget.reserve(100)
        let waiter = Task { try await budget.reserve(10) }
        await arrivals.wait(for: 1)
        await #expect(throws: MemoryBudget.Refusal.queueFull(waiting: 1)) { _ = try await budget.reserve(10) }
        held.release()
        _ = try await waiter.value
    }

    @Test func aWaitEndsAtItsLimitAndACancelledWaiterLeaves() async throws {
        let clock = TestClock()
        let arrivals = ArrivalCounter()
        let budget = makeBudget(100, maxWait: .seconds(5), clock: clock, arrivals: arrivals)
        let held = try await budget.reserve(100)
        let timed = Task { try await budget.reserve(10) }
        await arrivals.wait(for: 1)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(5))
        await #expect(throws: MemoryBudget.Refusal.timedOut(after: .seconds(5))) { _ = try await timed.value }
        #expect(budget.usage.waiting == 0)

        let cancelled = Task { try await budget.reserve(10) }
        await arrivals.wait(for: 2)
        cancelled.cancel()
        await #expect(throws: MemoryBudget.Refusal.cancelled) { _ = try await cancelled.value }
        #expect(budget.usage == MemoryBudget.Usage(capacity: 100, reserved: 100, waiting: 0))
        held.release()
    }

    @Test func heldMemoryIsGivenBackWhenAReservationNeedsItsRoom() async throws {
        let held = Held()
        held.bytes.store(60, ordering: .relaxed)
        let budget = makeBudget(100, held: held, clock: TestClock())
        let small = try await budget.reserve(40)
        #expect(held.reclaims.load(ordering: .relaxed) == 0)
        small.release()
        let large = try await budget.reserve(41)
        #expect(held.reclaims.load(ordering: .relaxed) == 1)
        #expect(held.bytes.load(ordering: .relaxed) == 0)
        // A reservation goes back when its last reference does.
        _ = large
    }

    @Test func aNewCapacityGrantsWhatNowFitsAndRefusesWhatNeverWill() async throws {
        let arrivals = ArrivalCounter()
        let budget = makeBudget(100, clock: TestClock(), arrivals: arrivals)
        let held = try await budget.reserve(100)
        let large = Task { try await budget.reserve(80) }
        await arrivals.wait(for: 1)
        budget.capacity = 50
        await #expect(throws: MemoryBudget.Refusal.exceedsBudget(required: 80, budget: 50)) {
            _ = try await large.value
        }
        let small = Task { try await budget.reserve(30) }
        await arrivals.wait(for: 2)
        budget.capacity = 130
        let granted = try await small.value
        #expect(budget.usage == MemoryBudget.Usage(capacity: 130, reserved: 130, waiting: 0))
        granted.release()
        held.release()
    }

    @Test func aReservationIsReleasedOnceWhateverHappens() async throws {
        let budget = makeBudget(100, clock: TestClock())
        do {
            let reservation = try await budget.reserve(30)
            reservation.release()
            reservation.release()
            #expect(budget.usage.reserved == 0)
            _ = try await budget.reserve(30)  // dropped at once
        }
        #expect(budget.usage.reserved == 0)
        #expect(budget.reserveIfFree(101) == nil)
        let free = try #require(budget.reserveIfFree(100))
        #expect(budget.reserveIfFree(1) == nil)
        free.release()
    }
}
