import Testing

@testable import Osprey

@Suite("The download queue's state machine")
struct DownloadQueueStateMachineTests {
    typealias Machine = DownloadQueueStateMachine<String>

    /// Enqueues `keys` at `priority` and returns their callers and transfers, in order.
    private func enqueue(
        _ keys: [String], on machine: inout Machine, priority: DownloadPriority = .normal
    ) -> [Machine.Enqueued] {
        keys.map { machine.enqueue(key: $0, priority: priority, detached: false) }
    }

    /// Runs the queue with a limit of one to the end, finishing each transfer as it starts, and returns the keys in
    /// the order they started.
    private func drain(_ machine: inout Machine, first: [Machine.TransferID]) -> [String] {
        var order: [String] = []
        var running = first
        while let id = running.first {
            order.append(machine.transfers[id]!.key)
            running = Array(running.dropFirst()) + machine.finish(id).start
        }
        return order
    }

    // MARK: Limit

    @Test func startsUpToTheLimitAndQueuesTheRest() {
        // Given a limit of 2
        var machine = Machine(limit: 2)
        // When 4 distinct keys are enqueued
        let enqueued = enqueue(["a", "b", "c", "d"], on: &machine)
        // Then the first two start at once and two wait
        #expect(enqueued.map(\.start.count) == [1, 1, 0, 0])
        #expect(machine.activeCount == 2)
        #expect(machine.queuedCount == 2)
        // When one finishes, exactly one more starts
        let finished = machine.finish(enqueued[0].transfer)
        #expect(finished.callers == [enqueued[0].caller])
        #expect(finished.start == [enqueued[2].transfer])
        #expect(machine.activeCount == 2)
    }

    @Test func raisingTheLimitStartsQueuedTransfersAndLoweringItCancelsNothing() {
        var machine = Machine(limit: 1)
        let enqueued = enqueue(["a", "b", "c", "d"], on: &machine)
        // Raising to 3 starts two more at once
        #expect(machine.setLimit(3) == [enqueued[1].transfer, enqueued[2].transfer])
        // Lowering to 1 stops nothing running...
        #expect(machine.setLimit(1).isEmpty)
        #expect(machine.activeCount == 3)
        // ...and nothing starts until the running count is under the new limit
        #expect(machine.finish(enqueued[0].transfer).start.isEmpty)
        #expect(machine.finish(enqueued[1].transfer).start.isEmpty)
        #expect(machine.finish(enqueued[2].transfer).start == [enqueued[3].transfer])
    }

    @Test func aLimitBelowOneMeansOne() {
        var machine = Machine(limit: 0)
        #expect(machine.limit == 1)
        #expect(machine.setLimit(-5).isEmpty)
        #expect(machine.limit == 1)
    }

    // MARK: Order

    @Test(arguments: [ImageDownloader.Order.fifo, .lifo])
    func startsInArrivalOrderOrItsReverseWithinAPriority(order: ImageDownloader.Order) {
        // Given a suspended queue of limit 1 with ten waiting transfers
        var machine = Machine(limit: 1, order: order)
        machine.suspend()
        let keys = (0..<10).map { "k\($0)" }
        _ = enqueue(keys, on: &machine)
        // When it resumes and each transfer finishes in turn
        let started = drain(&machine, first: machine.resume())
        // Then they ran in arrival order (FIFO) or its reverse (LIFO)
        #expect(started == (order == .fifo ? keys : keys.reversed()))
    }

    @Test(arguments: [ImageDownloader.Order.fifo, .lifo])
    func startsHigherPrioritiesFirst(order: ImageDownloader.Order) {
        var machine = Machine(limit: 1, order: order)
        machine.suspend()
        _ = machine.enqueue(key: "low1", priority: .low, detached: false)
        _ = machine.enqueue(key: "high1", priority: .high, detached: false)
        _ = machine.enqueue(key: "normal", priority: .normal, detached: false)
        _ = machine.enqueue(key: "high2", priority: .high, detached: false)
        _ = machine.enqueue(key: "veryLow", priority: .veryLow, detached: false)
        _ = machine.enqueue(key: "veryHigh", priority: .veryHigh, detached: false)
        _ = machine.enqueue(key: "low2", priority: .low, detached: false)
        let started = drain(&machine, first: machine.resume())
        let expected =
            order == .fifo
            ? ["veryHigh", "high1", "high2", "normal", "low1", "low2", "veryLow"]
            : ["veryHigh", "high2", "high1", "normal", "low2", "low1", "veryLow"]
        #expect(started == expected)
    }

    @Test func aQueuedRequestWhosePriorityIsRaisedGoesFirst() {
        var machine = Machine(limit: 1)
        machine.suspend()
        let enqueued = enqueue(["a", "b", "c", "d"], on: &machine)
        machine.setPriority(.veryHigh, of: enqueued[2].caller)
        #expect(machine.priority(of: enqueued[2].transfer) == .veryHigh)
        #expect(drain(&machine, first: machine.resume()) == ["c", "a", "b", "d"])
    }

    @Test func changingTheOrderAppliesToTransfersStartedFromThen() {
        var machine = Machine(limit: 1)
        machine.suspend()
        _ = enqueue(["a", "b", "c"], on: &machine)
        machine.order = .lifo
        #expect(drain(&machine, first: machine.resume()) == ["c", "b", "a"])
    }

    // MARK: Suspending

    @Test func aSuspendedQueueStartsNothingUntilResumed() {
        var machine = Machine(limit: 6)
        machine.suspend()
        let enqueued = enqueue(["a", "b"], on: &machine)
        #expect(enqueued.allSatisfy { $0.start.isEmpty })
        #expect(machine.setLimit(8).isEmpty)
        #expect(machine.activeCount == 0)
        #expect(machine.resume() == enqueued.map(\.transfer))
    }

    @Test func suspendingLetsRunningTransfersFinishButStartsNoMore() {
        var machine = Machine(limit: 1)
        let enqueued = enqueue(["a", "b"], on: &machine)
        machine.suspend()
        #expect(machine.phase(of: enqueued[0].transfer) == .running)
        #expect(machine.finish(enqueued[0].transfer).start.isEmpty)
        #expect(machine.resume() == [enqueued[1].transfer])
    }

    // MARK: Coalescing

    @Test func callersOfTheSameKeyShareOneTransferAtTheHighestPriority() {
        var machine = Machine(limit: 1)
        _ = machine.enqueue(key: "busy", priority: .normal, detached: false)
        let first = machine.enqueue(key: "a", priority: .low, detached: false)
        let second = machine.enqueue(key: "a", priority: .high, detached: false)
        #expect(!first.joined)
        #expect(second.joined)
        #expect(second.transfer == first.transfer)
        #expect(second.start.isEmpty)
        #expect(machine.callerCount(of: first.transfer) == 2)
        #expect(machine.priority(of: first.transfer) == .high)
        // When the high-priority caller leaves, the transfer falls back to the remaining caller's priority
        #expect(machine.leave(second.caller) == .left(first.transfer))
        #expect(machine.priority(of: first.transfer) == .low)
    }

    @Test func aJoinedRunningTransferDeliversToEveryCallerInArrivalOrder() {
        var machine = Machine(limit: 6)
        let callers = enqueue(["a", "a", "a"], on: &machine)
        #expect(callers.map(\.joined) == [false, true, true])
        #expect(machine.activeCount == 1)
        let finished = machine.finish(callers[0].transfer)
        #expect(finished.callers == callers.map(\.caller))
        // Delivered callers are gone; a new caller starts a new transfer
        #expect(machine.leave(callers[1].caller) == .unknownCaller)
        let again = machine.enqueue(key: "a", priority: .normal, detached: false)
        #expect(!again.joined)
        #expect(again.transfer != callers[0].transfer)
    }

    @Test func aCallerLeavingLeavesTheOthersAlone() {
        var machine = Machine(limit: 6)
        let callers = enqueue(["a", "a"], on: &machine)
        #expect(machine.leave(callers[0].caller) == .left(callers[0].transfer))
        #expect(machine.phase(of: callers[0].transfer) == .running)
        #expect(machine.finish(callers[0].transfer).callers == [callers[1].caller])
    }

    @Test func theLastCallerLeavingAQueuedTransferDropsIt() {
        var machine = Machine(limit: 1)
        let enqueued = enqueue(["busy", "a", "a", "b"], on: &machine)
        #expect(machine.leave(enqueued[1].caller) == .left(enqueued[1].transfer))
        #expect(machine.leave(enqueued[2].caller) == .droppedQueued(enqueued[1].transfer))
        #expect(machine.phase(of: enqueued[1].transfer) == nil)
        // The dropped transfer never starts: "b" is next
        #expect(machine.finish(enqueued[0].transfer).start == [enqueued[3].transfer])
    }

    @Test func theLastCallerLeavingARunningTransferCancelsItAndItKeepsItsSlotUntilFinished() {
        var machine = Machine(limit: 1)
        let enqueued = enqueue(["a", "b"], on: &machine)
        #expect(machine.leave(enqueued[0].caller) == .cancelRunning(enqueued[0].transfer))
        #expect(machine.phase(of: enqueued[0].transfer) == .cancelling)
        #expect(machine.activeCount == 1)
        // A new caller for the same key does not join the dying transfer: it queues a new one
        let again = machine.enqueue(key: "a", priority: .normal, detached: false)
        #expect(!again.joined)
        #expect(again.start.isEmpty)
        // Once the cancelled transfer is over, the next one starts, and nobody is delivered to
        let finished = machine.finish(enqueued[0].transfer)
        #expect(finished.callers.isEmpty)
        #expect(finished.start == [enqueued[1].transfer])
    }

    @Test func aDetachedTransferRunsOnWhenEveryCallerLeavesAndLaterCallersJoinIt() {
        var machine = Machine(limit: 1)
        let first = machine.enqueue(key: "a", priority: .high, detached: true)
        let second = machine.enqueue(key: "a", priority: .normal, detached: false)
        #expect(machine.leave(first.caller) == .left(first.transfer))
        #expect(machine.leave(second.caller) == .left(first.transfer))
        #expect(machine.phase(of: first.transfer) == .running)
        // With nobody left, it keeps the priority it had when the last caller left
        #expect(machine.priority(of: first.transfer) == .normal)
        let later = machine.enqueue(key: "a", priority: .low, detached: false)
        #expect(later.joined)
        #expect(machine.finish(first.transfer).callers == [later.caller])
    }

    @Test func aQueuedDetachedTransferWithNoCallersStillStarts() {
        var machine = Machine(limit: 1)
        let busy = machine.enqueue(key: "busy", priority: .normal, detached: false)
        let detached = machine.enqueue(key: "a", priority: .normal, detached: true)
        #expect(machine.leave(detached.caller) == .left(detached.transfer))
        #expect(machine.finish(busy.transfer).start == [detached.transfer])
    }

    // MARK: Cancelling everything

    @Test func cancelAllReleasesEveryCallerAndStopsEveryTransfer() {
        var machine = Machine(limit: 2)
        let enqueued = enqueue(["a", "a", "b", "c", "d"], on: &machine)
        let detached = machine.enqueue(key: "e", priority: .normal, detached: true)
        let cancelled = machine.cancelAll()
        #expect(cancelled.callers == (enqueued.map(\.caller) + [detached.caller]).sorted())
        #expect(cancelled.cancelRunning == [enqueued[0].transfer, enqueued[2].transfer])
        #expect(cancelled.droppedQueued == [enqueued[3].transfer, enqueued[4].transfer, detached.transfer])
        #expect(machine.queuedCount == 0)
        // The running ones keep their slots until they are over
        #expect(machine.activeCount == 2)
        #expect(machine.finish(enqueued[0].transfer) == .init(callers: [], start: []))
        #expect(machine.finish(enqueued[2].transfer) == .init(callers: [], start: []))
        #expect(machine.activeCount == 0)
        #expect(machine.transfers.isEmpty)
    }

    @Test func finishingATransferThatIsNotRunningDoesNothing() {
        var machine = Machine(limit: 1)
        let enqueued = enqueue(["a", "b"], on: &machine)
        #expect(machine.finish(enqueued[1].transfer) == .init(callers: [], start: []))
        #expect(machine.finish(Machine.TransferID(rawValue: 999)) == .init(callers: [], start: []))
        #expect(machine.activeCount == 1)
    }

    // MARK: Invariants under random events

    @Test(arguments: 1...20)
    func invariantsHoldUnderRandomEvents(seed: UInt64) {
        // Given a seeded random sequence of every event, on few keys so that callers often share transfers
        var random = SplitMix64(seed: seed)
        var machine = Machine(limit: 3, order: seed.isMultiple(of: 2) ? .fifo : .lifo)
        var waiting: Set<Machine.CallerID> = []  // callers not yet delivered to nor left
        var running: Set<Machine.TransferID> = []
        var maxLimitSinceIdle = 3
        for _ in 0..<2_000 {
            // Each queued transfer's rank before the event: priority, then place in the order
            var ranks = Self.queuedRanks(of: machine)
            let runningBefore = running
            switch random.next() % 9 {
            case 0, 1, 2:
                let key = "k\(random.next() % 5)"
                let priority = DownloadPriority(rawValue: Int(random.next() % 5))!
                let enqueued = machine.enqueue(key: key, priority: priority, detached: random.next() % 8 == 0)
                waiting.insert(enqueued.caller)
                running.formUnion(enqueued.start)
                if !enqueued.joined { ranks[enqueued.transfer] = Self.rank(priority, sequence: .max, machine.order) }
            case 3:
                guard let caller = waiting.randomElement(using: &random) else { continue }
                waiting.remove(caller)
                if case .unknownCaller = machine.leave(caller) { Issue.record("\(caller) was waiting") }
            case 4, 5:
                guard let id = running.randomElement(using: &random) else { continue }
                running.remove(id)
                let finished = machine.finish(id)
                for caller in finished.callers {
                    #expect(waiting.remove(caller) != nil, "\(caller) delivered twice or after leaving")
                }
                running.formUnion(finished.start)
            case 6:
                let limit = Int(random.next() % 5) + 1
                maxLimitSinceIdle = max(maxLimitSinceIdle, limit)
                running.formUnion(machine.setLimit(limit))
            case 7:
                if machine.isSuspended { running.formUnion(machine.resume()) } else { machine.suspend() }
            default:
                guard let caller = waiting.randomElement(using: &random) else { continue }
                machine.setPriority(DownloadPriority(rawValue: Int(random.next() % 5))!, of: caller)
            }
            // Then the slots in use are the transfers started and not finished, never above the highest limit set
            #expect(machine.activeCount == running.count)
            #expect(machine.activeCount <= maxLimitSinceIdle)
            if machine.activeCount <= machine.limit { maxLimitSinceIdle = machine.limit }
            // Every waiting caller belongs to a transfer that still exists
            for caller in waiting {
                #expect(machine.transfer(of: caller).flatMap { machine.phase(of: $0) } != nil)
            }
            // A transfer's priority is its highest caller's
            for transfer in machine.transfers.values where !transfer.callers.isEmpty {
                #expect(transfer.priority == transfer.callers.values.map(\.priority).max())
            }
            // Nothing waits while a slot is free and the queue runs
            if !machine.isSuspended, machine.activeCount < machine.limit { #expect(machine.queuedCount == 0) }
            // What started outranked everything still queued: highest priority, then oldest (FIFO) or newest (LIFO)
            let stillQueued = Self.queuedRanks(of: machine)
            for started in running.subtracting(runningBefore) {
                let rank = ranks[started]!
                #expect(stillQueued.values.allSatisfy { $0 < rank }, "\(started) started out of order")
            }
        }
    }

    /// The rank of every queued transfer: a higher one starts first.
    private static func queuedRanks(of machine: Machine) -> [Machine.TransferID: Rank] {
        var ranks: [Machine.TransferID: Rank] = [:]
        for (id, transfer) in machine.transfers {
            if case .queued(let sequence) = transfer.phase {
                ranks[id] = rank(transfer.priority, sequence: sequence, machine.order)
            }
        }
        return ranks
    }

    private struct Rank: Comparable {
        let priority: Int
        let place: Int
        static func < (lhs: Rank, rhs: Rank) -> Bool { (lhs.priority, lhs.place) < (rhs.priority, rhs.place) }
    }

    /// FIFO: the older (lower sequence) ranks higher; LIFO: the newer.
    private static func rank(_ priority: DownloadPriority, sequence: Int, _ order: ImageDownloader.Order) -> Rank {
        Rank(priority: priority.rawValue, place: order == .fifo ? -sequence : sequence)
    }
}

/// A small seeded generator, so a failing random test can be replayed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
