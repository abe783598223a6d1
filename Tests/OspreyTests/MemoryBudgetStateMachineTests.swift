import Testing

@testable import Osprey

/// The memory budget's bookkeeping, with no I/O: each decision, then invariants under seeded random events.
@Suite struct MemoryBudgetStateMachineTests {
    typealias Machine = MemoryBudgetStateMachine

    @Test func grantsWhatFitsQueuesTheRestAndRefusesWhatNeverFits() {
        var machine = Machine(capacity: 100, maxWaiting: 2)
        #expect(machine.reserve(60, id: 1, held: 0) == .granted(reclaims: false))
        #expect(machine.reserve(101, id: 2, held: 0) == .refused(.exceedsBudget))
        #expect(machine.reserve(50, id: 3, held: 0) == .waits)
        // First come, first served: a small one that would fit waits behind the first waiter.
        #expect(machine.reserve(10, id: 4, held: 0) == .waits)
        #expect(machine.reserve(5, id: 5, held: 0) == .refused(.queueFull))
        #expect(machine.reserved == 60)
        // Releasing 60 lets both waiters in, in order.
        #expect(machine.release(60, held: 0) == [.init(id: 3, reclaims: false), .init(id: 4, reclaims: false)])
        #expect(machine.reserved == 60 && machine.waiters.isEmpty)
    }

    @Test func heldMemoryCountsAndIsGivenBackOnlyWhenNeeded() {
        var machine = Machine(capacity: 100, maxWaiting: .max)
        // 30 held (recycled buffers): 70 fit beside them, 71 only if they are given back.
        #expect(machine.reserve(70, id: 1, held: 30) == .granted(reclaims: false))
        #expect(machine.release(70, held: 30).isEmpty)
        #expect(machine.reserve(71, id: 2, held: 30) == .granted(reclaims: true))
        #expect(machine.reserve(40, id: 3, held: 0) == .waits)
        #expect(machine.release(71, held: 50) == [.init(id: 3, reclaims: false)])
    }

    @Test func aCancelledHeadLetsTheNextIn() {
        var machine = Machine(capacity: 100, maxWaiting: .max)
        _ = machine.reserve(80, id: 1, held: 0)
        _ = machine.reserve(90, id: 2, held: 0)
        _ = machine.reserve(10, id: 3, held: 0)
        let cancelled = machine.cancel(2, held: 0)
        #expect(cancelled.wasWaiting && cancelled.grants == [.init(id: 3, reclaims: false)])
        #expect(machine.cancel(2, held: 0).wasWaiting == false)
        // A smaller capacity refuses the waiters that could never fit.
        _ = machine.reserve(50, id: 4, held: 0)
        let shrunk = machine.setCapacity(40, held: 0)
        #expect(shrunk.refused.map(\.id) == [4] && shrunk.grants.isEmpty)
    }

    @Test(arguments: [1, 2, 3, 42, 1_000, 65_537] as [UInt64])
    func invariantsHoldUnderRandomEvents(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var machine = Machine(capacity: 1_000, maxWaiting: 8)
        var granted: [UInt64: Int] = [:]
        var waiting: [UInt64: Int] = [:]
        var order: [UInt64] = []  // waiters, in arrival order
        var nextID: UInt64 = 0
        func take(_ grants: [Machine.Grant]) {
            for grant in grants {
                // Granted in arrival order: always the oldest waiter.
                #expect(grant.id == order.first)
                order.removeFirst()
                granted[grant.id] = waiting.removeValue(forKey: grant.id)
            }
        }
        for _ in 0..<5_000 {
            let held = Int(random.next() % 300)
            switch random.next() % 4 {
            case 0, 1:
                nextID += 1
                let bytes = Int(random.next() % 1_100)
                switch machine.reserve(bytes, id: nextID, held: held) {
                case .granted:
                    #expect(waiting.isEmpty)
                    granted[nextID] = bytes
                case .waits:
                    waiting[nextID] = bytes
                    order.append(nextID)
                case .refused(.exceedsBudget): #expect(bytes > machine.capacity)
                case .refused(.queueFull): #expect(waiting.count == 8)
                }
            case 2:
                guard let (id, bytes) = granted.randomElement(using: &random) else { continue }
                granted[id] = nil
                take(machine.release(bytes, held: held))
            default:
                guard let id = order.randomElement(using: &random) else { continue }
                let cancelled = machine.cancel(id, held: held)
                #expect(cancelled.wasWaiting)
                waiting[id] = nil
                order.removeAll { $0 == id }
                take(cancelled.grants)
            }
            // What is reserved is what was granted and not released, and never more than the budget.
            #expect(machine.reserved == granted.values.reduce(0, +))
            #expect(machine.reserved <= machine.capacity)
            #expect(machine.waiters.map(\.id) == order)
            #expect(machine.waiters.count <= 8)
            // Nobody waits while the first waiter would fit.
            if let first = machine.waiters.first {
                #expect(first.bytes > machine.capacity - machine.reserved)
            }
        }
    }
}
