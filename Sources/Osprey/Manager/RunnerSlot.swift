/// The task that runs a job's work, and the callers waiting for it who came before it was made (a job is registered
/// before its runner exists, so that no load can start one twice). Kept inside the job's own locked state, beside
/// what decides whether the job was abandoned meanwhile.
struct RunnerSlot {
    typealias Runner = Task<Void, Never>
    typealias Waiter = CheckedContinuation<Runner, Never>

    /// The runner, once made.
    private(set) var runner: Runner?
    private var waiters: [Waiter] = []

    /// Keeps `runner`; returns the waiters to resume with it (outside the lock).
    mutating func set(_ runner: Runner) -> [Waiter] {
        self.runner = runner
        defer { waiters = [] }
        return waiters
    }

    /// The runner, or `nil` after keeping `waiter` to be resumed with it once it is made.
    mutating func runner(orKeep waiter: Waiter) -> Runner? {
        if let runner { return runner }
        waiters.append(waiter)
        return nil
    }

    /// Waits for the work of the runner that `lookUp` gives or keeps the continuation for, suspended (not polling)
    /// until the runner exists.
    static func waitForEnd(_ lookUp: (Waiter) -> Runner?) async {
        let runner = await withCheckedContinuation { (waiter: Waiter) in
            if let runner = lookUp(waiter) { waiter.resume(returning: runner) }
        }
        await runner.value
    }
}
