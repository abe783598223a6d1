import OspreyCodecs

// The decode stage of the jobs: one decode of a source for every job that needs it. The jobs of different variants of
// one URL (sizes, processors, output formats) share its download; here they share its decoded image too.
//
// A job that will decode a source joins it before its download starts, with the decoder it would use. The first job
// to have the bytes starts a decode at the largest size any joined job needs (full size when one needs it); the
// others wait for it. A job whose need the running decode does not serve (it came later, with a larger size, or other
// bytes) starts another, at the largest size needed then. An ended decode's outcome stays while a job of its source
// remains, so that a job reaching its decode late still takes it; later loads find the image in the cache's memory.
//
// A job waiting for a decode that stops waiting (its load cancelled) leaves it at once; when the last one leaves a
// running decode, the decode is cancelled (the decoder stops at its next checkpoint) and the next job starts its own.
extension JobTable {
    /// A decode's phase.
    enum DecodePhase: Hashable {
        /// Decoding; jobs may wait for it.
        case running
        /// Every job waiting for it left: its decoder is to stop, and no job waits for it again.
        case cancelled
        /// Its outcome is made; kept for the jobs of its source that come to it later.
        case ended
    }

    /// One decode.
    struct Decode {
        /// The source whose jobs share it; `nil` for a job's decode of its own.
        let source: Source?
        /// What it decodes, at what size.
        let ask: DecodeAsk
        /// The jobs waiting for its outcome.
        var waiting: Set<JobID>
        var phase: DecodePhase
    }

    /// The jobs that said they will decode a source, and its latest decode.
    struct SourceEntry {
        var joined: [JobID: JobDecoder] = [:]
        /// The decode a job of the source joins: running or ended, never cancelled.
        var latest: DecodeID?
    }

    /// What ``decode(for:source:ask:header:)`` says the job is to do.
    enum DecodeStart {
        /// Wait for the decode under way (or take the outcome of the ended one).
        case share(DecodeID)
        /// Start this new decode of `ask` (the job's own, widened to what the source's jobs need), and let go of the
        /// outcomes of `forgotten` decodes that no job can take any more.
        case start(DecodeID, DecodeAsk, forgotten: [DecodeID])
    }

    /// Whether `job` waits for `decode`'s outcome.
    func isWaiting(_ job: JobID, for decode: DecodeID) -> Bool {
        decodes[decode]?.waiting.contains(job) ?? false
    }

    /// `job` will decode `source` with `decoder`: a decode started from now on covers its need.
    mutating func joinSource(_ source: Source, job: JobID, decoder: JobDecoder) {
        sources[source, default: SourceEntry()].joined[job] = decoder
    }

    /// `job` will not decode `source` (any more). Returns the decodes whose outcome nobody can take now: the last job
    /// of a source to leave lets its ended decode go.
    mutating func leaveSource(_ source: Source, job: JobID) -> [DecodeID] {
        guard var entry = sources[source] else { return [] }
        entry.joined[job] = nil
        guard entry.joined.isEmpty else {
            sources[source] = entry
            return []
        }
        sources[source] = nil
        guard let latest = entry.latest, decodes[latest]?.phase == .ended else { return [] }
        decodes[latest] = nil
        return [latest]
    }

    /// `job` has the bytes `ask` describes, of `source` (`nil`: a decode of its own), with `header` when it reads:
    /// it waits for its source's latest decode when that serves it, else starts one, at the largest size the jobs
    /// joined to the source need.
    mutating func decode(for job: JobID, source: Source?, ask: DecodeAsk, header: ImageHeader?) -> DecodeStart {
        assert(jobs[job] != nil, "\(job) decodes outside the table")
        var widened = ask
        var forgotten: [DecodeID] = []
        if let source, let entry = sources[source] {
            if let latest = entry.latest, let running = decodes[latest], running.ask.serves(ask) {
                if running.phase == .running { decodes[latest]!.waiting.insert(job) }
                return .share(latest)
            }
            if let header {
                for other in entry.joined.values where ask.agreesOnFrames(with: other.options.firstFrameOnly) {
                    widened = widened.covering(other.size(for: header))
                }
            }
            if let latest = entry.latest, decodes[latest]?.phase == .ended {
                decodes[latest] = nil
                forgotten.append(latest)
            }
        }
        nextDecode += 1
        let id = DecodeID(rawValue: nextDecode)
        decodes[id] = Decode(source: source, ask: widened, waiting: [job], phase: .running)
        // A job that has not joined its source (none else will wait) keeps nothing there.
        if let source, sources[source] != nil { sources[source]!.latest = id }
        return .start(id, widened, forgotten: forgotten)
    }

    /// `job` stops waiting for `decode`. Returns whether the decode is to be cancelled: it was running and `job` was
    /// the last waiting for it.
    mutating func stopWaiting(_ job: JobID, for decode: DecodeID) -> Bool {
        guard decodes[decode]?.waiting.remove(job) != nil, let entry = decodes[decode], entry.phase == .running,
            entry.waiting.isEmpty
        else { return false }
        decodes[decode]!.phase = .cancelled
        if let source = entry.source, sources[source]?.latest == decode { sources[source]!.latest = nil }
        return true
    }

    /// `decode`'s outcome is made: returns the jobs waiting for it, in the order they came, and whether the outcome
    /// is kept for jobs of its source that come later.
    mutating func endDecode(_ decode: DecodeID) -> (waiting: [JobID], keepsOutcome: Bool) {
        guard let entry = decodes[decode] else { return ([], false) }
        let waiting = entry.waiting.sorted()
        guard entry.phase == .running, keepsOutcome(ifEnded: decode) else {
            decodes[decode] = nil
            return (waiting, false)
        }
        decodes[decode]!.phase = .ended
        decodes[decode]!.waiting = []
        return (waiting, true)
    }

    /// Whether `decode`, once ended, is the one its source's jobs would take.
    private func keepsOutcome(ifEnded decode: DecodeID) -> Bool {
        guard let source = decodes[decode]?.source else { return false }
        return sources[source]?.latest == decode
    }
}

/// What a decode decodes and at what size, as the job table compares decodes: the bytes, the size asked (`nil`: the
/// full size), and whether only the first frame is kept.
struct DecodeAsk: Sendable {
    let bytes: [UInt8]
    let size: ImageSize?
    let firstFrameOnly: Bool
    /// A JPEG is one frame: decodes that differ only in keeping the first frame give the same image.
    let isOneFrame: Bool

    /// Whether a decode of `self` gives what `other` asks for: the same bytes, at a size that covers `other`'s, with
    /// the frames it keeps.
    func serves(_ other: DecodeAsk) -> Bool {
        SourceDecodeSize.size(size, covers: other.size) && agreesOnFrames(with: other.firstFrameOnly)
            && bytes == other.bytes
    }

    /// Whether keeping the first frame only, or not (`firstFrameOnly`), gives the image this ask gives.
    func agreesOnFrames(with firstFrameOnly: Bool) -> Bool {
        firstFrameOnly == self.firstFrameOnly || isOneFrame
    }

    /// This ask at a size that covers `other` too.
    func covering(_ other: ImageSize?) -> DecodeAsk {
        DecodeAsk(
            bytes: bytes, size: SourceDecodeSize.larger(size, other), firstFrameOnly: firstFrameOnly,
            isOneFrame: isOneFrame)
    }
}

/// Sizes a decode is asked for, `nil` being the full size.
enum SourceDecodeSize {
    /// Whether an image decoded at `size` is large enough for a need of `needed`.
    static func size(_ size: ImageSize?, covers needed: ImageSize?) -> Bool {
        guard let size else { return true }
        guard let needed else { return false }
        return size.width >= needed.width && size.height >= needed.height
    }

    /// The size that covers both `a` and `b`.
    static func larger(_ a: ImageSize?, _ b: ImageSize?) -> ImageSize? {
        guard let a, let b else { return nil }
        return ImageSize(width: max(a.width, b.width), height: max(a.height, b.height))
    }
}
