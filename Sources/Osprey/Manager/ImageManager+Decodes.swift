import OspreyCodecs
import Synchronization

// The I/O side of the decodes in the job table (JobTable+Decodes.swift): each decode's task on the decoding threads,
// its cancellation flag, its outcome, and the jobs suspended until it comes. The table decides, under the manager's
// lock; this runs what it decided, outside it.
extension ImageManager {
    typealias Decoded = Result<Image, CodecError>

    /// What one decode of the table runs, and the jobs waiting for it.
    struct DecodeWork {
        /// Read by the decoder at its checkpoints; set when the table cancels the decode.
        let cancellation = DecodingCancellation()
        /// The outcome, once made.
        var outcome: Decoded?
        /// The jobs that have not taken the outcome yet, with their continuation once suspended.
        var takers: [Jobs.JobID: CheckedContinuation<Decoded?, Never>?] = [:]
        /// Whether the table keeps the ended decode for later jobs of its source.
        var isKept = false

        /// Whether nothing is left to hand out: no taker, and the table does not keep the outcome.
        var isDone: Bool { outcome != nil && takers.isEmpty && !isKept }
    }

    /// `job` will decode `source` with `decoder`: a decode it or another job of the source starts covers its need.
    func joinSource(_ source: DecodeSource, job: Jobs.JobID, decoder: JobDecoder) {
        state.withLock { $0.table.joinSource(source, job: job, decoder: decoder) }
    }

    /// `job` will not decode `source` any more.
    func leaveSource(_ source: DecodeSource, job: Jobs.JobID) {
        state.withLock { state in
            for decode in state.table.leaveSource(source, job: job) { Self.forget(decode, in: &state) }
        }
    }

    /// `bytes` decoded for `job`: by its source's decode when that serves it (`source` `nil`: a decode of its own),
    /// else by a new one run on the decoding threads with `decoder`'s options at the size the table asks. `decoded`
    /// is called with each new decode's image and the size asked, before any job is given it. `nil` when the calling
    /// task is cancelled first: it returns at once, and the decode is cancelled when no other job waits for it.
    func decode(
        _ bytes: [UInt8], for job: Jobs.JobID, source: DecodeSource?, decoder: JobDecoder,
        decoded: @escaping @Sendable (Image, ImageHeader, ImageSize?) -> Void
    ) async -> Decoded? {
        let header = try? ImageHeader(reading: bytes, coders: decoder.options.coders)
        let ask = DecodeAsk(
            bytes: bytes, size: header.map { decoder.size(for: $0) } ?? nil,
            firstFrameOnly: decoder.options.firstFrameOnly, isOneFrame: header?.format == .jpeg)
        let (start, cancellation) = state.withLock { state in
            let start = state.table.decode(for: job, source: source, ask: ask, header: header)
            switch start {
            case .share(let id):
                state.decodeWork[id]?.takers[job] = .some(nil)
                return (start, nil as DecodingCancellation?)
            case .start(let id, _, let forgotten):
                for old in forgotten { Self.forget(old, in: &state) }
                var work = DecodeWork()
                work.takers[job] = .some(nil)
                state.decodeWork[id] = work
                return (start, work.cancellation)
            }
        }
        let id: Jobs.DecodeID
        switch start {
        case .share(let shared):
            decodeCounts.countShared()
            id = shared
        case .start(let new, let asked, _):
            decodeCounts.countDecode()
            var options: DecodingOptions
            if source == nil {
                options = decoder.options(for: bytes)
            } else {
                options = decoder.options
                options.targetSize = asked.size
            }
            options.cancellation = cancellation
            Task(executorPreference: decodingPool) { [self] in
                let outcome = Result { () throws(CodecError) in try ImageDecoder.decode(bytes, options: options) }
                if case .success(let image) = outcome, let header { decoded(image, header, asked.size) }
                decodeCounts.ended(outcome)
                ended(new, with: outcome)
            }
            id = new
        }
        return await outcome(of: id, for: job)
    }

    /// The outcome of `decode` for `job`, waited for; `nil` when the calling task is cancelled first.
    private func outcome(of decode: Jobs.DecodeID, for job: Jobs.JobID) async -> Decoded? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Decoded?? in
                    guard var work = state.decodeWork[decode], work.takers[job] != nil else { return .some(nil) }
                    if let outcome = work.outcome {
                        work.takers[job] = nil
                        state.decodeWork[decode] = work.isDone ? nil : work
                        return .some(outcome)
                    }
                    guard !Task.isCancelled else { return .some(nil) }
                    state.decodeWork[decode]!.takers[job] = continuation
                    return nil
                }
                guard let now else { return }
                if now == nil { stopWaiting(job, for: decode) }
                continuation.resume(returning: now)
            }
        } onCancel: {
            stopWaiting(job, for: decode)
        }
    }

    /// `job` no longer waits for `decode`: it is resumed with `nil` if it was suspended, and the decode is cancelled
    /// when it was the last to wait.
    private func stopWaiting(_ job: Jobs.JobID, for decode: Jobs.DecodeID) {
        let (waiter, cancellation) = state.withLock {
            state -> (CheckedContinuation<Decoded?, Never>?, DecodingCancellation?) in
            guard var work = state.decodeWork[decode], work.outcome == nil,
                let taker = work.takers.removeValue(forKey: job)
            else { return (nil, nil) }
            state.decodeWork[decode] = work
            let cancels = state.table.stopWaiting(job, for: decode)
            return (taker, cancels ? work.cancellation : nil)
        }
        cancellation?.cancel()
        waiter?.resume(returning: nil)
    }

    /// `decode`'s outcome is made: the jobs suspended for it get it; those that have not suspended yet take it when
    /// they do.
    private func ended(_ decode: Jobs.DecodeID, with outcome: Decoded) {
        let waiters = state.withLock { state -> [CheckedContinuation<Decoded?, Never>] in
            let (_, keeps) = state.table.endDecode(decode)
            guard var work = state.decodeWork[decode] else { return [] }
            work.outcome = outcome
            work.isKept = keeps
            var waiters: [CheckedContinuation<Decoded?, Never>] = []
            for (job, taker) in work.takers {
                guard let taker else { continue }
                waiters.append(taker)
                work.takers[job] = nil
            }
            state.decodeWork[decode] = work.isDone ? nil : work
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }

    /// The table let `decode`'s kept outcome go: it goes once every job that had it has taken it.
    private static func forget(_ decode: Jobs.DecodeID, in state: inout State) {
        guard var work = state.decodeWork[decode] else { return }
        work.isKept = false
        state.decodeWork[decode] = work.isDone ? nil : work
    }
}
