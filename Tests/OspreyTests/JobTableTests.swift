import OspreyCodecs
import Testing

@testable import Osprey

@Suite("The manager's job table")
struct JobTableTests {
    typealias Table = JobTable<String, String>

    private func id(_ number: Int) -> Table.SubscriberID { Table.SubscriberID(rawValue: number) }

    private func subscribe(
        _ number: Int, to key: String, on table: inout Table, priority: DownloadPriority = .normal,
        detached: Bool = false
    ) -> Table.Subscribed {
        table.subscribe(id(number), to: key, priority: priority, detached: detached)!
    }

    // MARK: Coalescing

    @Test func subscribersOfOneKeyShareOneJobAndDifferentKeysDoNot() {
        var table = Table()
        // Given three subscribers, two for "a"
        let first = subscribe(1, to: "a", on: &table)
        let second = subscribe(2, to: "a", on: &table)
        let other = subscribe(3, to: "b", on: &table)
        // Then "a" started one job which the second joined, and "b" one of its own
        #expect(first.isNew && !second.isNew && other.isNew)
        #expect(second.job == first.job)
        #expect(other.job != first.job)
        #expect(table.subscribers(of: first.job) == [id(1), id(2)])
        #expect(table.jobs.count == 2)
    }

    @Test func deliveringGoesToEverySubscriberInOrderAndClosesTheKey() {
        var table = Table()
        let job = subscribe(5, to: "a", on: &table).job
        _ = subscribe(2, to: "a", on: &table)
        _ = subscribe(9, to: "a", on: &table)
        // When the job's outcome is made
        #expect(table.deliver(job) == [id(2), id(5), id(9)])
        // Then it takes no one new: a later subscriber starts a new job, while the first finishes its stores
        #expect(table.phase(of: job) == .delivered)
        let later = subscribe(10, to: "a", on: &table)
        #expect(later.isNew && later.job != job)
        // Delivering twice delivers nothing
        #expect(table.deliver(job).isEmpty)
        // Leaving after the delivery changes nothing
        #expect(table.leave(id(5)) == .unknownSubscriber)
        // The job leaves the table when its work ends
        let idleAfterFirst = table.end(job)
        #expect(!idleAfterFirst)
        #expect(table.phase(of: job) == nil)
        let idleAfterLater = table.end(later.job)
        #expect(idleAfterLater)
        #expect(table.isIdle)
    }

    // MARK: Leaving

    @Test func theLastSubscriberLeavingCancelsTheJobAndFreesItsKey() {
        var table = Table()
        let job = subscribe(1, to: "a", on: &table).job
        _ = subscribe(2, to: "a", on: &table)
        #expect(table.leave(id(1)) == .left(job, priority: nil))
        #expect(table.leave(id(2)) == .cancel(job))
        #expect(table.phase(of: job) == .cancelled)
        // A cancelled job delivers to nobody and takes no one new
        #expect(table.deliver(job).isEmpty)
        #expect(subscribe(3, to: "a", on: &table).job != job)
        // It stays in the table until its work reports its end
        #expect(table.jobs[job] != nil)
        let idle = table.end(job)
        #expect(!idle)
        #expect(table.jobs[job] == nil)
    }

    @Test func aDetachedJobRunsOnWhenEveryoneLeaves() {
        var table = Table()
        let job = subscribe(1, to: "a", on: &table).job
        _ = subscribe(2, to: "a", on: &table, detached: true)
        #expect(table.leave(id(1)) == .left(job, priority: nil))
        #expect(table.leave(id(2)) == .left(job, priority: nil))
        #expect(table.phase(of: job) == .running)
        // A new subscriber joins it while it runs
        #expect(subscribe(3, to: "a", on: &table).job == job)
    }

    @Test func leavingTwiceOrUnknownIsHarmless() {
        var table = Table()
        _ = subscribe(1, to: "a", on: &table)
        _ = subscribe(2, to: "a", on: &table)
        _ = table.leave(id(1))
        #expect(table.leave(id(1)) == .unknownSubscriber)
        #expect(table.leave(id(42)) == .unknownSubscriber)
    }

    // MARK: Priority

    @Test func aJobRunsAtItsHighestSubscribersPriority() {
        var table = Table()
        let job = subscribe(1, to: "a", on: &table, priority: .low).job
        // Joining higher raises it; joining lower does not
        #expect(subscribe(2, to: "a", on: &table, priority: .high).priority == .high)
        #expect(subscribe(3, to: "a", on: &table, priority: .veryLow).priority == nil)
        #expect(table.priority(of: job) == .high)
        // Raising one subscriber moves the job; lowering another below the highest does not
        let raised = table.setPriority(.veryHigh, of: id(3))
        #expect(raised?.0 == job && raised?.1 == .veryHigh)
        #expect(table.setPriority(.low, of: id(2)) == nil)
        // The highest leaving lowers it to the next
        #expect(table.leave(id(3)) == .left(job, priority: .low))
        #expect(table.priority(of: job) == .low)
        // A subscriber that is not there changes nothing
        #expect(table.setPriority(.veryHigh, of: id(99)) == nil)
    }

    @Test func waitingForTheStoreIsAskedByAnySubscriber() {
        var table = Table()
        let job = subscribe(1, to: "a", on: &table).job
        #expect(!table.waitsForStore(job))
        _ = table.subscribe(id(2), to: "a", priority: .normal, detached: false, waitsForStore: true)
        #expect(table.waitsForStore(job))
        _ = table.leave(id(2))
        #expect(!table.waitsForStore(job))
    }

    // MARK: Cancelling everything

    @Test func cancellingEverythingSparesDetachedJobsAndShuttingDownRefusesNewSubscribers() {
        var table = Table()
        let plain = subscribe(1, to: "a", on: &table).job
        let detached = subscribe(2, to: "b", on: &table, detached: true).job
        let delivered = subscribe(3, to: "c", on: &table).job
        _ = subscribe(4, to: "a", on: &table)
        _ = table.deliver(delivered)
        let cancelled = table.shutDown()
        #expect(cancelled.subscribers == [id(1), id(2), id(4)])
        #expect(cancelled.cancel == [plain])
        #expect(table.phase(of: detached) == .running)
        #expect(table.phase(of: delivered) == .delivered)
        #expect(table.subscribe(id(5), to: "b", priority: .normal, detached: false) == nil)
        #expect(table.isShutDown)
    }

    // MARK: Invariants under random events

    @Test(arguments: 1...20)
    func invariantsHoldUnderRandomEvents(seed: UInt64) throws {
        // Given a seeded random sequence of every event, on few keys so that subscribers often share jobs
        var random = SplitMix64(seed: seed)
        var table = Table()
        var nextSubscriber = 0
        var waiting: [Table.SubscriberID: DownloadPriority] = [:]  // subscribed, neither delivered to nor left
        var started: Set<Table.JobID> = []  // jobs whose work was started and has not ended
        var delivered: Set<Table.JobID> = []
        var cancelled: Set<Table.JobID> = []
        var detachedJobs: Set<Table.JobID> = []
        var jobKeys: [Table.JobID: String] = [:]
        // The decode stage, as the I/O layer drives it: which source each job joined, which decode it waits for, and
        // the decodes whose decoder runs (started, its end not reported)
        var joined: [Table.JobID: String] = [:]
        var waitingIn: [Table.JobID: Table.DecodeID] = [:]
        var decoding: Set<Table.DecodeID> = []
        let header = try ImageHeader(
            reading: ImageEncoder.encode(
                Image(pixels: PixelBuffer(width: 4, height: 4, format: .rgb8, bytes: [UInt8](repeating: 7, count: 48))),
                as: .png))
        for step in 0..<3_000 {
            let event = random.next() % 15
            switch event {
            case 0, 1, 2, 3:
                nextSubscriber += 1
                let subscriber = id(nextSubscriber)
                let key = "k\(random.next() % 4)"
                let priority = DownloadPriority(rawValue: Int(random.next() % 5))!
                let detached = random.next() % 10 == 0
                guard let subscribed = table.subscribe(subscriber, to: key, priority: priority, detached: detached)
                else {
                    #expect(table.isShutDown)
                    continue
                }
                waiting[subscriber] = priority
                // A new job is started once; a joined one is running, for the same key
                if subscribed.isNew {
                    #expect(started.insert(subscribed.job).inserted, "\(subscribed.job) started twice")
                    jobKeys[subscribed.job] = key
                } else {
                    #expect(table.phase(of: subscribed.job) == .running, "joined a job that is not running")
                    #expect(jobKeys[subscribed.job] == key)
                }
                if detached { detachedJobs.insert(subscribed.job) }
            case 4:
                guard let subscriber = waiting.keys.randomElement(using: &random) else { continue }
                let job = table.job(of: subscriber)
                waiting[subscriber] = nil
                switch table.leave(subscriber) {
                case .unknownSubscriber:
                    Issue.record("\(subscriber) was waiting")
                case .left(let left, _):
                    #expect(left == job)
                case .cancel(let left):
                    #expect(left == job)
                    #expect(!detachedJobs.contains(left), "a detached job was cancelled by a leave")
                    #expect(cancelled.insert(left).inserted, "\(left) cancelled twice")
                }
            case 5:
                guard let subscriber = waiting.keys.randomElement(using: &random) else { continue }
                let priority = DownloadPriority(rawValue: Int(random.next() % 5))!
                waiting[subscriber] = priority
                if let (job, new) = table.setPriority(priority, of: subscriber) {
                    #expect(table.job(of: subscriber) == job)
                    #expect(new == table.priority(of: job))
                }
            case 6, 7:
                // A running job's stage makes the outcome
                guard let job = started.subtracting(delivered).subtracting(cancelled).randomElement(using: &random)
                else { continue }
                let expected = table.subscribers(of: job)
                let subscribers = table.deliver(job)
                #expect(subscribers == expected)
                #expect(delivered.insert(job).inserted, "\(job) finished twice")
                for subscriber in subscribers {
                    let wasWaiting = waiting.removeValue(forKey: subscriber) != nil
                    #expect(wasWaiting, "\(subscriber) delivered twice or after leaving")
                }
            case 8:
                // A delivered or cancelled job's work ends (a running one delivers first), leaving its decode and its
                // source first, as the job's stages do on the way out
                guard let job = started.filter({ table.phase(of: $0) != .running }).randomElement(using: &random)
                else { continue }
                if let decode = waitingIn.removeValue(forKey: job) { _ = table.stopWaiting(job, for: decode) }
                if let source = joined.removeValue(forKey: job) { _ = table.leaveSource(source, job: job) }
                started.remove(job)
                #expect(table.end(job) == started.isEmpty)
                #expect(table.phase(of: job) == nil)
            case 10:
                // A job will decode a source
                guard let job = started.filter({ joined[$0] == nil }).randomElement(using: &random) else { continue }
                let source = "s\(random.next() % 2)"
                joined[job] = source
                table.joinSource(source, job: job, decoder: Self.decoder(Self.side(&random)))
            case 11:
                // A job has bytes: of its source (or, one time in four, a decode of its own), of one of two contents
                guard let job = started.filter({ waitingIn[$0] == nil }).randomElement(using: &random) else { continue }
                let source = random.next() % 4 == 0 ? nil : joined[job]
                let ask = DecodeAsk(
                    bytes: [UInt8(random.next() % 2)],
                    size: Self.side(&random).map { ImageSize(width: $0, height: $0) },
                    firstFrameOnly: random.next() % 2 == 0, isOneFrame: random.next() % 4 == 0)
                switch table.decode(for: job, source: source, ask: ask, header: header) {
                case .share(let decode):
                    // Shared only by a job of its source, and only what serves it
                    let entry = try #require(table.decodes[decode])
                    #expect(source != nil && entry.source == source && entry.ask.serves(ask))
                    if entry.phase == .running { waitingIn[job] = decode } else { #expect(entry.phase == .ended) }
                case .start(let decode, let asked, let forgotten):
                    #expect(asked.serves(ask), "a decode started for \(job) does not serve it")
                    #expect(decoding.insert(decode).inserted)
                    waitingIn[job] = decode
                    for old in forgotten { #expect(table.decodes[old] == nil && !decoding.contains(old)) }
                }
            case 12:
                // A job stops waiting for its decode (its load was cancelled)
                guard let (job, decode) = waitingIn.randomElement(using: &random) else { continue }
                waitingIn[job] = nil
                let others = waitingIn.values.contains(decode)
                #expect(table.stopWaiting(job, for: decode) == !others, "cancelled with others waiting, or not at all")
            case 13:
                // A decoder returns: the jobs waiting get its outcome
                guard let decode = decoding.randomElement(using: &random) else { continue }
                decoding.remove(decode)
                let expected = waitingIn.filter { $0.value == decode }.keys.sorted()
                let ended = table.endDecode(decode)
                #expect(ended.waiting == expected)
                for job in expected { waitingIn[job] = nil }
                if !ended.keepsOutcome { #expect(table.decodes[decode] == nil) }
            case 14:
                // A job is past its decode and leaves its source
                guard let (job, source) = joined.randomElement(using: &random), waitingIn[job] == nil else { continue }
                joined[job] = nil
                for forgotten in table.leaveSource(source, job: job) {
                    #expect(!joined.values.contains(source), "\(source)'s outcome let go while a job of it remains")
                    #expect(table.decodes[forgotten] == nil)
                }
            default:
                guard random.next() % 25 == 0 else { continue }
                let all = step % 2 == 0 ? table.cancelAll() : table.shutDown()
                for subscriber in all.subscribers {
                    #expect(waiting.removeValue(forKey: subscriber) != nil, "\(subscriber) cancelled after it ended")
                }
                for job in all.cancel {
                    #expect(!detachedJobs.contains(job))
                    #expect(cancelled.insert(job).inserted)
                }
            }
            checkInvariants(table, waiting: waiting, started: started, detachedJobs: detachedJobs)
            checkDecodeInvariants(table, joined: joined, waitingIn: waitingIn, decoding: decoding)
        }
    }

    private static func side(_ random: inout SplitMix64) -> Int? {
        [nil, 32, 64][Int(random.next() % 3)]
    }

    private static func decoder(_ side: Int?) -> JobDecoder {
        var options = DecodingOptions()
        options.targetSize = side.map { ImageSize(width: $0, height: $0) }
        return JobDecoder(options: options)
    }

    /// What must hold of the decodes after every event.
    private func checkDecodeInvariants(
        _ table: Table, joined: [Table.JobID: String], waitingIn: [Table.JobID: Table.DecodeID],
        decoding: Set<Table.DecodeID>
    ) {
        // Every job waiting for a decode, or joined to a source, is a job of the table
        for job in Set(joined.keys).union(waitingIn.keys) { #expect(table.jobs[job] != nil, "\(job) left the table") }
        // A decode whose decoder runs stays in the table until it returns
        for decode in decoding { #expect(table.decodes[decode] != nil, "\(decode) lost while decoding") }
        for (id, decode) in table.decodes {
            #expect(decode.waiting == Set(waitingIn.filter { $0.value == id }.keys))
            let latest = decode.source.flatMap { table.sources[$0]?.latest }
            switch decode.phase {
            case .running:
                // Someone waits for a running decode; the last to leave cancels it
                #expect(!decode.waiting.isEmpty && decoding.contains(id))
            case .cancelled:
                // Nobody waits for a cancelled decode, and nobody new will
                #expect(decode.waiting.isEmpty && decoding.contains(id) && latest != id)
            case .ended:
                // An ended decode is kept only as its source's latest, for jobs still to come
                #expect(decode.waiting.isEmpty && !decoding.contains(id) && latest == id)
            }
        }
        // A source is known while a job of it remains, with exactly those jobs
        #expect(Set(table.sources.keys) == Set(joined.values))
        for (source, entry) in table.sources {
            #expect(Set(entry.joined.keys) == Set(joined.filter { $0.value == source }.keys))
            if let latest = entry.latest { #expect(table.decodes[latest].map { $0.phase != .cancelled } == true) }
        }
    }

    /// What must hold after every event.
    private func checkInvariants(
        _ table: Table, waiting: [Table.SubscriberID: DownloadPriority], started: Set<Table.JobID>,
        detachedJobs: Set<Table.JobID>
    ) {
        // No subscriber lost: each waiting one belongs to a running job that lists it
        for subscriber in waiting.keys {
            guard let job = table.job(of: subscriber) else {
                Issue.record("\(subscriber) lost")
                continue
            }
            #expect(table.phase(of: job) == .running)
            #expect(table.subscribers(of: job).contains(subscriber))
        }
        var subscriberCount = 0
        var runningKeys: Set<String> = []
        for (id, job) in table.jobs {
            subscriberCount += job.subscribers.count
            // The table holds exactly the jobs started and not ended
            #expect(started.contains(id), "\(id) in the table but not started, or ended")
            // Priority is the highest of the subscribers'
            if let highest = job.subscribers.values.map(\.priority).max() { #expect(job.priority == highest) }
            for (subscriber, entry) in job.subscribers { #expect(waiting[subscriber] == entry.priority) }
            switch job.phase {
            case .running:
                // One running job per key; a running job without subscribers is a detached one
                #expect(runningKeys.insert(job.key).inserted, "two running jobs for \(job.key)")
                if job.subscribers.isEmpty { #expect(job.isDetached && detachedJobs.contains(id)) }
            case .delivered, .cancelled:
                // A finished or cancelled job keeps no subscriber and released its key
                #expect(job.subscribers.isEmpty)
            }
        }
        #expect(subscriberCount == waiting.count)
        #expect(table.jobs.count == started.count)
        #expect(table.isIdle == started.isEmpty)
    }
}
