/// The download queue's logic, with no I/O: which transfers run, which wait, who shares what.
///
/// A *caller* is one request for a download; a *transfer* is one trip to the origin. Callers whose requests have the
/// same `Key` while a transfer for it is queued or running join that transfer instead of making another.
/// A transfer's priority is the highest of its callers'; it runs once a slot is free (at most `limit` at once),
/// highest priority first, FIFO or LIFO within a priority, and not at all while the queue is suspended.
///
/// When its last caller leaves, a queued transfer is dropped and a running one is cancelled, unless a caller asked for
/// it to be *detached*: then it runs to the end with nobody waiting. A cancelled transfer keeps its slot until
/// the I/O layer reports it finished, so the origin never sees more than `limit` requests at once; it no longer
/// accepts new callers meanwhile.
///
/// Every event returns what the I/O layer must do: start transfers, cancel them, deliver to callers.
struct DownloadQueueStateMachine<Key: Hashable> {
    enum TransferKind: StateMachineIDKind { static var name: String { "transfer" } }
    enum CallerKind: StateMachineIDKind { static var name: String { "caller" } }
    typealias TransferID = StateMachineID<TransferKind>
    typealias CallerID = StateMachineID<CallerKind>

    typealias Order = ImageDownloader.Order

    enum Phase: Hashable {
        /// Waiting for a slot; `sequence` orders it among its priority.
        case queued(sequence: Int)
        /// Holding a slot, talking to the origin.
        case running
        /// Cancelled while running: holding its slot until the I/O layer reports it over.
        case cancelling
    }

    struct Transfer {
        let key: Key
        var phase: Phase
        var callers: [CallerID: Caller]
        /// Whether a caller asked for the transfer to run to the end even if every caller leaves. Sticky.
        var isDetached: Bool
        /// The highest priority of its callers; kept as it was when the last caller leaves a detached transfer.
        var priority: DownloadPriority
    }

    /// A queued transfer's place in `waiting`.
    struct Waiting {
        let sequence: Int
        let id: TransferID
    }

    struct Caller: Hashable {
        var priority: DownloadPriority
        let isDetached: Bool
    }

    /// What `enqueue` did.
    struct Enqueued: Hashable {
        let caller: CallerID
        let transfer: TransferID
        /// Whether the caller joined a transfer that already existed.
        let joined: Bool
        /// Transfers to start now.
        let start: [TransferID]
    }

    /// What `leave` did.
    enum Left: Hashable {
        /// The caller was not there (it had already left or been delivered to).
        case unknownCaller
        /// The caller left; its transfer goes on for the others (or detached).
        case left(TransferID)
        /// The caller was the last of a queued transfer, which is gone.
        case droppedQueued(TransferID)
        /// The caller was the last of a running transfer, which must be cancelled; it keeps its slot until finished.
        case cancelRunning(TransferID)
    }

    /// What `finish` did.
    struct Finished: Hashable {
        /// The callers to deliver the transfer's outcome to, in the order they came.
        let callers: [CallerID]
        /// Transfers to start now.
        let start: [TransferID]
    }

    /// What `cancelAll` did.
    struct CancelledAll: Hashable {
        /// Every caller, to be told it was cancelled.
        let callers: [CallerID]
        /// Running transfers to cancel.
        let cancelRunning: [TransferID]
        /// Queued transfers that are gone.
        let droppedQueued: [TransferID]
    }

    private(set) var transfers: [TransferID: Transfer] = [:]
    /// The queued transfers, by priority (indexed by its raw value), each level in ascending sequence: the next to
    /// start is the first (FIFO) or last (LIFO) of the highest non-empty level, found without scanning `transfers`.
    private var waiting: [[Waiting]] = Array(repeating: [], count: DownloadPriority.allCases.count)
    /// The transfer each key's new callers join: queued or running, never cancelling.
    private var joinable: [Key: TransferID] = [:]
    private var callerTransfers: [CallerID: TransferID] = [:]
    private var nextID = 0
    private var nextSequence = 0

    /// How many transfers may hold a slot at once. At least 1.
    private(set) var limit: Int
    /// FIFO or LIFO within a priority.
    var order: Order
    private(set) var isSuspended = false

    init(limit: Int, order: Order = .fifo) {
        self.limit = max(1, limit)
        self.order = order
    }

    // MARK: Reading

    /// Transfers holding a slot (running or being cancelled).
    private(set) var activeCount = 0

    /// Transfers waiting for a slot.
    var queuedCount: Int { transfers.count - activeCount }

    func phase(of transfer: TransferID) -> Phase? { transfers[transfer]?.phase }

    func priority(of transfer: TransferID) -> DownloadPriority? { transfers[transfer]?.priority }

    func transfer(of caller: CallerID) -> TransferID? { callerTransfers[caller] }

    func callerCount(of transfer: TransferID) -> Int { transfers[transfer]?.callers.count ?? 0 }

    // MARK: Events

    /// A caller asks for `key` at `priority`; `detached` keeps the transfer going if every caller leaves.
    mutating func enqueue(key: Key, priority: DownloadPriority, detached: Bool) -> Enqueued {
        let caller = CallerID(rawValue: makeID())
        let entry = Caller(priority: priority, isDetached: detached)
        if let existing = joinable[key] {
            transfers[existing]!.callers[caller] = entry
            transfers[existing]!.isDetached = transfers[existing]!.isDetached || detached
            updatePriority(of: existing)
            callerTransfers[caller] = existing
            return Enqueued(caller: caller, transfer: existing, joined: true, start: [])
        }
        let transfer = TransferID(rawValue: makeID())
        let sequence = makeSequence()
        transfers[transfer] = Transfer(
            key: key, phase: .queued(sequence: sequence), callers: [caller: entry], isDetached: detached,
            priority: priority)
        // The newest sequence of all: it goes last in its level.
        waiting[priority.rawValue].append(Waiting(sequence: sequence, id: transfer))
        joinable[key] = transfer
        callerTransfers[caller] = transfer
        return Enqueued(caller: caller, transfer: transfer, joined: false, start: startReady())
    }

    /// A caller leaves: it no longer wants the outcome.
    mutating func leave(_ caller: CallerID) -> Left {
        guard let id = callerTransfers.removeValue(forKey: caller) else { return .unknownCaller }
        transfers[id]!.callers[caller] = nil
        let transfer = transfers[id]!
        guard transfer.callers.isEmpty, !transfer.isDetached else {
            updatePriority(of: id)
            return .left(id)
        }
        switch transfer.phase {
        case .queued:
            remove(id)
            return .droppedQueued(id)
        case .running:
            transfers[id]!.phase = .cancelling
            joinable[transfer.key] = nil
            return .cancelRunning(id)
        case .cancelling:
            return .left(id)
        }
    }

    /// A caller's priority changes; its transfer's priority becomes the highest of its callers'.
    mutating func setPriority(_ priority: DownloadPriority, of caller: CallerID) {
        guard let id = callerTransfers[caller] else { return }
        transfers[id]!.callers[caller]!.priority = priority
        updatePriority(of: id)
    }

    /// A started transfer is over (delivered, failed or cancelled): its callers get the outcome, its slot frees.
    mutating func finish(_ id: TransferID) -> Finished {
        guard let transfer = transfers[id], transfer.phase == .running || transfer.phase == .cancelling else {
            return Finished(callers: [], start: [])
        }
        let callers = transfer.callers.keys.sorted()
        for caller in callers { callerTransfers[caller] = nil }
        remove(id)
        activeCount -= 1
        return Finished(callers: callers, start: startReady())
    }

    /// Stops starting transfers; running ones go on.
    mutating func suspend() {
        isSuspended = true
    }

    /// Starts transfers again, as many as the limit allows.
    mutating func resume() -> [TransferID] {
        isSuspended = false
        return startReady()
    }

    /// Changes how many transfers run at once. Lowering it cancels nothing: running transfers finish first.
    mutating func setLimit(_ limit: Int) -> [TransferID] {
        self.limit = max(1, limit)
        return startReady()
    }

    /// Every caller leaves and every transfer stops, detached or not.
    mutating func cancelAll() -> CancelledAll {
        let callers = callerTransfers.keys.sorted()
        callerTransfers = [:]
        var cancelRunning: [TransferID] = []
        var droppedQueued: [TransferID] = []
        for (id, transfer) in transfers.sorted(by: { $0.key < $1.key }) {
            transfers[id]!.callers = [:]
            switch transfer.phase {
            case .queued:
                remove(id)
                droppedQueued.append(id)
            case .running:
                transfers[id]!.phase = .cancelling
                joinable[transfer.key] = nil
                cancelRunning.append(id)
            case .cancelling:
                break
            }
        }
        return CancelledAll(callers: callers, cancelRunning: cancelRunning, droppedQueued: droppedQueued)
    }

    // MARK: Scheduling

    /// Moves queued transfers to running while slots are free and the queue is not suspended.
    private mutating func startReady() -> [TransferID] {
        var started: [TransferID] = []
        while !isSuspended, activeCount < limit, let next = takeNextQueued() {
            transfers[next]!.phase = .running
            activeCount += 1
            started.append(next)
        }
        return started
    }

    /// Takes the queued transfer to start next out of `waiting`: highest priority, then oldest (FIFO) or newest (LIFO).
    private mutating func takeNextQueued() -> TransferID? {
        guard let level = waiting.lastIndex(where: { !$0.isEmpty }) else { return nil }
        // removeFirst moves the rest of the level down: a memmove of a few bytes per waiting transfer.
        return order == .fifo ? waiting[level].removeFirst().id : waiting[level].removeLast().id
    }

    /// Makes a transfer's priority the highest of its callers' again, moving it to its new level when it is queued.
    private mutating func updatePriority(of id: TransferID) {
        let old = transfers[id]!.priority
        guard let new = transfers[id]!.callers.values.map(\.priority).max(), new != old else { return }
        transfers[id]!.priority = new
        guard case .queued(let sequence) = transfers[id]!.phase else { return }
        let entry = Waiting(sequence: sequence, id: id)
        removeWaiting(entry, at: old)
        waiting[new.rawValue].insert(entry, at: Self.position(of: sequence, in: waiting[new.rawValue]))
    }

    private mutating func remove(_ id: TransferID) {
        guard let transfer = transfers.removeValue(forKey: id) else { return }
        if joinable[transfer.key] == id { joinable[transfer.key] = nil }
        if case .queued(let sequence) = transfer.phase {
            removeWaiting(Waiting(sequence: sequence, id: id), at: transfer.priority)
        }
    }

    private mutating func removeWaiting(_ entry: Waiting, at priority: DownloadPriority) {
        let index = Self.position(of: entry.sequence, in: waiting[priority.rawValue])
        assert(index < waiting[priority.rawValue].count && waiting[priority.rawValue][index].id == entry.id)
        waiting[priority.rawValue].remove(at: index)
    }

    /// The index of the first entry of `level` whose sequence is not below `sequence`: the entry itself when it is
    /// there, else where it goes.
    private static func position(of sequence: Int, in level: [Waiting]) -> Int {
        var (low, high) = (0, level.count)
        while low < high {
            let middle = (low + high) / 2
            if level[middle].sequence < sequence { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private mutating func makeID() -> Int {
        nextID += 1
        return nextID
    }

    private mutating func makeSequence() -> Int {
        nextSequence += 1
        return nextSequence
    }
}
