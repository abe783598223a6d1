/// The manager's coordination, with no I/O: which jobs exist, who subscribes to each and at what priority, and what
/// must happen when a subscriber comes or leaves, a priority changes, or a job's work reaches its end.
///
/// A *subscriber* is one load (an ``ImageTask``, or a caller of ``ImageManager/encodedImage(for:as:)``); a *job* is
/// the work that produces one result for every subscriber of the same `Key` while it runs. A job's
/// priority is the highest of its subscribers'; its download moves with it.
///
/// A job lives through three phases. *Running*: it takes new subscribers. *Delivered*: its outcome went to every
/// subscriber it had, and it finishes what comes after the delivery (disk stores) without taking anyone new, so a
/// later load of the key starts a job of its own. *Cancelled*: its last subscriber left and none asked for
/// ``ImageRequest/Options/detached``, or the manager cancelled everything: its work must be cancelled, and it
/// takes no one new. Whatever its phase, a job stays in the table until its work reports its end, so that the
/// manager knows what still runs (``ImageManager/shutdown()`` waits for it); the key it held is free as soon as it
/// stops taking subscribers.
///
/// Jobs share decodes too (`JobTable+Decodes.swift`): a job says, before its download, that it will decode its
/// `Source`; the first to have the bytes starts one decode at the largest size the jobs of the source need, the others
/// wait for it, and the last to stop waiting cancels it.
///
/// Every event returns what the I/O layer must do: start a job's work, cancel it, move its download's priority,
/// deliver to subscribers, start or cancel a decode, resume the jobs waiting for one.
struct JobTable<Key: Hashable, Source: Hashable> {
    enum JobKind: StateMachineIDKind { static var name: String { "job" } }
    enum SubscriberKind: StateMachineIDKind { static var name: String { "subscriber" } }
    enum DecodeKind: StateMachineIDKind { static var name: String { "decode" } }
    typealias JobID = StateMachineID<JobKind>
    typealias DecodeID = StateMachineID<DecodeKind>
    /// A subscriber's number is the caller's: the manager uses its loads' numbers.
    typealias SubscriberID = StateMachineID<SubscriberKind>

    enum Phase: Hashable {
        /// Working; takes new subscribers.
        case running
        /// Its outcome is delivered; finishing what follows the delivery.
        case delivered
        /// Abandoned or cancelled: its work must stop.
        case cancelled
    }

    struct Subscriber: Hashable {
        var priority: DownloadPriority
        /// Keeps the job running when every subscriber has left.
        let isDetached: Bool
        /// Wants the disk store done before the outcome is delivered.
        let waitsForStore: Bool
    }

    struct Job {
        let key: Key
        var phase: Phase
        var subscribers: [SubscriberID: Subscriber]
        /// Whether a subscriber asked for the job to run to its end even if every subscriber leaves. Sticky.
        var isDetached: Bool
        /// The highest priority of its subscribers; kept as it was when the last one leaves.
        var priority: DownloadPriority
    }

    /// What ``subscribe(_:to:priority:detached:waitsForStore:)`` did.
    struct Subscribed: Hashable {
        let job: JobID
        /// The job is new: its work is to be started.
        let isNew: Bool
        /// The job's new priority, when joining it raised it: its download is to move.
        let priority: DownloadPriority?
    }

    /// What ``leave(_:)`` did.
    enum Left: Hashable {
        /// The subscriber was not there (it had left, or been delivered to).
        case unknownSubscriber
        /// It left; the job goes on for the others (or detached). `priority`: the job's new one, when it fell.
        case left(JobID, priority: DownloadPriority?)
        /// It was the last of a running job, which is to be cancelled.
        case cancel(JobID)
    }

    /// What ``cancelAll()`` and ``shutDown()`` did.
    struct CancelledAll: Hashable {
        /// Every subscriber, to be told it was cancelled, in the order they came.
        let subscribers: [SubscriberID]
        /// Running jobs to cancel (detached ones run on).
        let cancel: [JobID]
    }

    private(set) var jobs: [JobID: Job] = [:]
    /// The job each key's new subscribers join: running, never delivered or cancelled.
    private var joinable: [Key: JobID] = [:]
    private var subscriberJobs: [SubscriberID: JobID] = [:]
    private var nextJob = 0
    /// Decodes running, and ended ones whose outcome a job of their source may still take.
    var decodes: [DecodeID: Decode] = [:]
    /// The sources jobs said they will decode, while one of those jobs remains.
    var sources: [Source: SourceEntry] = [:]
    var nextDecode = 0
    /// Set by ``shutDown()``: nobody subscribes any more.
    private(set) var isShutDown = false

    // MARK: Reading

    /// Whether no job's work is under way.
    var isIdle: Bool { jobs.isEmpty }

    func phase(of job: JobID) -> Phase? { jobs[job]?.phase }

    func priority(of job: JobID) -> DownloadPriority? { jobs[job]?.priority }

    func job(of subscriber: SubscriberID) -> JobID? { subscriberJobs[subscriber] }

    /// The subscribers of `job`, in the order they came.
    func subscribers(of job: JobID) -> [SubscriberID] { jobs[job]?.subscribers.keys.sorted() ?? [] }

    /// Whether a subscriber of `job` wants the disk store done before delivery.
    func waitsForStore(_ job: JobID) -> Bool { jobs[job]?.subscribers.values.contains { $0.waitsForStore } ?? false }

    // MARK: Events

    /// `subscriber` asks for `key`: it joins the running job for the key, or a new one. `nil` once shut down.
    mutating func subscribe(
        _ subscriber: SubscriberID, to key: Key, priority: DownloadPriority, detached: Bool, waitsForStore: Bool = false
    ) -> Subscribed? {
        guard !isShutDown else { return nil }
        precondition(subscriberJobs[subscriber] == nil, "\(subscriber) subscribed twice")
        let entry = Subscriber(priority: priority, isDetached: detached, waitsForStore: waitsForStore)
        if let existing = joinable[key] {
            jobs[existing]!.subscribers[subscriber] = entry
            if detached { jobs[existing]!.isDetached = true }
            subscriberJobs[subscriber] = existing
            return Subscribed(job: existing, isNew: false, priority: updatePriority(of: existing))
        }
        nextJob += 1
        let job = JobID(rawValue: nextJob)
        jobs[job] = Job(
            key: key, phase: .running, subscribers: [subscriber: entry], isDetached: detached, priority: priority)
        joinable[key] = job
        subscriberJobs[subscriber] = job
        return Subscribed(job: job, isNew: true, priority: nil)
    }

    /// `subscriber` no longer wants the outcome.
    mutating func leave(_ subscriber: SubscriberID) -> Left {
        guard let id = subscriberJobs.removeValue(forKey: subscriber) else { return .unknownSubscriber }
        jobs[id]!.subscribers[subscriber] = nil
        let job = jobs[id]!
        guard job.subscribers.isEmpty, !job.isDetached, job.phase == .running else {
            return .left(id, priority: updatePriority(of: id))
        }
        close(id, as: .cancelled)
        return .cancel(id)
    }

    /// `subscriber`'s priority changes; returns the job's new priority when that changed it.
    mutating func setPriority(_ priority: DownloadPriority, of subscriber: SubscriberID) -> (JobID, DownloadPriority)? {
        guard let id = subscriberJobs[subscriber] else { return nil }
        jobs[id]!.subscribers[subscriber]!.priority = priority
        return updatePriority(of: id).map { (id, $0) }
    }

    /// The job's stage that makes its outcome has finished: returns the subscribers to deliver it to, in the order
    /// they came. The job takes no one new from now on. Nothing for a job that is not running.
    mutating func deliver(_ id: JobID) -> [SubscriberID] {
        guard let job = jobs[id], job.phase == .running else { return [] }
        let subscribers = job.subscribers.keys.sorted()
        for subscriber in subscribers { subscriberJobs[subscriber] = nil }
        jobs[id]!.subscribers = [:]
        close(id, as: .delivered)
        return subscribers
    }

    /// The job's work is over, whatever its phase: it leaves the table. Returns whether the table is now idle.
    mutating func end(_ id: JobID) -> Bool {
        assert(!decodes.values.contains { $0.waiting.contains(id) }, "\(id) ended while waiting for a decode")
        assert(!sources.values.contains { $0.joined[id] != nil }, "\(id) ended without leaving its source")
        guard let job = jobs.removeValue(forKey: id) else { return jobs.isEmpty }
        if joinable[job.key] == id { joinable[job.key] = nil }
        for subscriber in job.subscribers.keys { subscriberJobs[subscriber] = nil }
        return jobs.isEmpty
    }

    /// Every subscriber leaves; every running job that is not detached is cancelled.
    mutating func cancelAll() -> CancelledAll {
        let subscribers = subscriberJobs.keys.sorted()
        subscriberJobs = [:]
        var cancel: [JobID] = []
        for id in jobs.keys.sorted() {
            jobs[id]!.subscribers = [:]
            guard jobs[id]!.phase == .running, !jobs[id]!.isDetached else { continue }
            close(id, as: .cancelled)
            cancel.append(id)
        }
        return CancelledAll(subscribers: subscribers, cancel: cancel)
    }

    /// ``cancelAll()``, and nobody subscribes from now on.
    mutating func shutDown() -> CancelledAll {
        isShutDown = true
        return cancelAll()
    }

    // MARK: Helpers

    /// Makes a job's priority the highest of its subscribers' again; returns it when it changed.
    private mutating func updatePriority(of id: JobID) -> DownloadPriority? {
        guard let new = jobs[id]!.subscribers.values.map(\.priority).max(), new != jobs[id]!.priority else {
            return nil
        }
        jobs[id]!.priority = new
        return new
    }

    private mutating func close(_ id: JobID, as phase: Phase) {
        jobs[id]!.phase = phase
        if joinable[jobs[id]!.key] == id { joinable[jobs[id]!.key] = nil }
    }
}
