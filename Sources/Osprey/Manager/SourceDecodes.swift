import OspreyCodecs
import Synchronization

/// One decode of a source for every job that needs it: the jobs of different variants of one URL (sizes, processors,
/// output formats) share the download already, and here they share the decoded image too.
///
/// A job that will decode a source says so before its download starts (``join(_:job:decoder:)``), with the decoder
/// it would use. The first of them to have the bytes decodes once, at the largest size any of the joined jobs needs
/// (full size when one of them needs it); the others wait for that decode and process its image. A job whose need the
/// running decode does not cover (it joined after the decode started, with a larger size) decodes again, at the
/// largest size needed then. The decoded image stays here while a joined job remains, so that a job reaching its
/// decode late still finds it; later loads find it in the cache's memory (``ImageCache/decodedSource(forKey:)``).
///
/// The memory budget is reserved by each job for its own decode and processing, as if it decoded alone: the job
/// that needs the largest size has reserved for it, so the shared image is covered once that job is past its
/// reservation; until then the decode may run ahead of it by one image.
///
/// A job cancelled while it waits for a decode returns at once; when the last job waiting for a decode has left, the
/// decode is cancelled (``RunningDecode``), and a job that comes later starts a decode of its own.
final class SourceDecodes: Sendable {
    /// What must agree for two jobs to share a decode: the source, and the decoding options other than the size and
    /// the first-frame choice (which must agree too unless the source is a JPEG, one frame either way).
    struct Key: Hashable, Sendable {
        let baseKey: String
        let pixelBudget: Int?
        /// Jobs with loaders of their own may get other bytes for one URL.
        let loader: ObjectIdentifier
    }

    typealias Decoded = Result<Image, CodecError>

    private struct Running {
        /// What the decode was asked for: `nil` for the full size.
        let size: ImageSize?
        /// Whether it keeps the first frame only.
        let firstFrameOnly: Bool
        /// What it decodes: a job that downloaded other bytes (the source changed) decodes them itself.
        let bytes: [UInt8]
        let decode: RunningDecode
    }

    private struct Entry {
        var decoders: [ObjectIdentifier: JobDecoder] = [:]
        var running: Running?
    }

    private let entries = Mutex<[Key: Entry]>([:])
    private let decodes = Atomic<Int>(0)
    private let shared = Atomic<Int>(0)
    private let cancelled = Atomic<Int>(0)

    /// How many decodes ran (shared or not).
    var decodeCount: Int { decodes.load(ordering: .relaxed) }
    /// How many jobs used a decode another job ran.
    var sharedCount: Int { shared.load(ordering: .relaxed) }
    /// How many decodes stopped early because every job waiting for them left (``CodecError/cancelled``).
    var cancelledCount: Int { cancelled.load(ordering: .relaxed) }

    /// Counts the end of a decode: a cancelled one among ``cancelledCount``.
    func ended(_ outcome: Decoded) {
        if case .failure(.cancelled) = outcome { cancelled.wrappingAdd(1, ordering: .relaxed) }
    }

    /// Counts a decode that ran outside this table.
    func countDecode() {
        decodes.wrappingAdd(1, ordering: .relaxed)
    }

    /// Records that `job` will decode the source of `key` with `decoder`.
    func join(_ key: Key, job: ObjectIdentifier, decoder: JobDecoder) {
        entries.withLock { $0[key, default: Entry()].decoders[job] = decoder }
    }

    /// Records that `job` will not decode the source of `key` (any more); the last to leave drops its image.
    func leave(_ key: Key, job: ObjectIdentifier) {
        entries.withLock { entries in
            entries[key]?.decoders[job] = nil
            if entries[key]?.decoders.isEmpty == true { entries[key] = nil }
        }
    }

    /// `bytes` decoded for `job`: by the decode under way when it covers the size `decoder` needs, else by a new one
    /// at the largest size the joined jobs need, run on `pool`. `decoded` is called once with each new decode's
    /// image and the size it was asked for.
    func decode(
        _ bytes: [UInt8], key: Key, job: ObjectIdentifier, decoder: JobDecoder, on pool: WorkerPool,
        decoded: @escaping @Sendable (Image, ImageHeader, ImageSize?) -> Void
    ) async -> Decoded {
        let header = try? ImageHeader(reading: bytes, coders: decoder.options.coders)
        let needed = header.map { decoder.size(for: $0) } ?? nil
        let firstFrameOnly = decoder.options.firstFrameOnly
        // A JPEG is one frame: decodes that differ only in keeping the first frame give the same image.
        let framesAgree = { (other: Bool) in other == firstFrameOnly || header?.format == .jpeg }
        let (running, place, isShared) = entries.withLock { entries -> (RunningDecode, Int, Bool) in
            var entry = entries[key] ?? Entry()
            if let running = entry.running, Self.size(running.size, covers: needed), running.bytes == bytes,
                framesAgree(running.firstFrameOnly), let place = running.decode.hold()
            {
                return (running.decode, place, true)
            }
            var size = needed
            if let header {
                for other in entry.decoders.values where framesAgree(other.options.firstFrameOnly) {
                    size = Self.larger(size, other.size(for: header))
                }
            }
            var options = decoder.options
            options.targetSize = size
            decodes.wrappingAdd(1, ordering: .relaxed)
            let asked = size
            let running = RunningDecode(bytes, options: options, on: pool, ended: ended) { image in
                if let header { decoded(image, header, asked) }
            }
            let place = running.hold() ?? 0  // A decode just made is not cancelled: the first place is always given.
            entry.running = Running(size: size, firstFrameOnly: firstFrameOnly, bytes: bytes, decode: running)
            // A job that has not joined (none else will wait) keeps nothing here.
            if !entry.decoders.isEmpty { entries[key] = entry }
            return (running, place, false)
        }
        if isShared { shared.wrappingAdd(1, ordering: .relaxed) }
        return await running.outcome(for: place) ?? .failure(.cancelled)
    }

    /// Whether an image decoded at `size` is large enough for a need of `needed` (`nil`: the full size).
    static func size(_ size: ImageSize?, covers needed: ImageSize?) -> Bool {
        guard let size else { return true }
        guard let needed else { return false }
        return size.width >= needed.width && size.height >= needed.height
    }

    /// The size that covers both `a` and `b`.
    private static func larger(_ a: ImageSize?, _ b: ImageSize?) -> ImageSize? {
        guard let a, let b else { return nil }
        return ImageSize(width: max(a.width, b.width), height: max(a.height, b.height))
    }
}

/// One decode under way on the decoding threads, and the jobs waiting for it: each holds a place
/// (``hold()``) and waits in it (``outcome(for:)``); a job cancelled while it waits leaves at once, and when the last
/// place is left before the decode ends, the decode is cancelled (its decoder stops at its next checkpoint, see
/// ``DecodingCancellation``).
final class RunningDecode: Sendable {
    private let cancellation = DecodingCancellation()
    private let state = Mutex(State())

    private struct State {
        var outcome: SourceDecodes.Decoded?
        /// The places held, with the continuation of the job waiting in each (`nil` until it waits).
        var places: [Int: CheckedContinuation<SourceDecodes.Decoded?, Never>?] = [:]
        var nextPlace = 0
    }

    /// Starts decoding `bytes` with `options` on `pool`; `decoded` is called with a successful decode's image, and
    /// `ended` with every outcome, before any waiting job is given it.
    init(
        _ bytes: [UInt8], options: DecodingOptions, on pool: WorkerPool,
        ended: @escaping @Sendable (SourceDecodes.Decoded) -> Void, decoded: @escaping @Sendable (Image) -> Void
    ) {
        var options = options
        options.cancellation = cancellation
        Task(executorPreference: pool) { [self] in
            let outcome = Result { () throws(CodecError) in try ImageDecoder.decode(bytes, options: options) }
            if case .success(let image) = outcome { decoded(image) }
            ended(outcome)
            let waiting = state.withLock { state in
                state.outcome = outcome
                defer { state.places = [:] }
                return state.places.values.compactMap { $0 }
            }
            for waiter in waiting { waiter.resume(returning: outcome) }
        }
    }

    /// A place to wait for the outcome in; `nil` when the decode was cancelled (every place was left), so that the
    /// caller starts another.
    func hold() -> Int? {
        state.withLock { state in
            guard !cancellation.isCancelled else { return nil }
            state.nextPlace += 1
            state.places[state.nextPlace] = .some(nil)
            return state.nextPlace
        }
    }

    /// The decode's outcome, waited for in `place`; `nil` when the calling task is cancelled first (it returns at
    /// once, leaving the place).
    func outcome(for place: Int) async -> SourceDecodes.Decoded? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> SourceDecodes.Decoded?? in
                    if let outcome = state.outcome { return .some(outcome) }
                    guard !Task.isCancelled, state.places[place] != nil else { return .some(nil) }
                    state.places[place] = continuation
                    return nil
                }
                if let now {
                    if now == nil { leave(place) }
                    continuation.resume(returning: now)
                }
            }
        } onCancel: {
            leave(place)
        }
    }

    /// Leaves `place`, resuming its waiter with `nil`; the last place left before the outcome cancels the decode.
    private func leave(_ place: Int) {
        let (waiter, cancels) = state.withLock { state -> (CheckedContinuation<SourceDecodes.Decoded?, Never>?, Bool) in
            guard state.outcome == nil, let held = state.places.removeValue(forKey: place) else { return (nil, false) }
            return (held, state.places.isEmpty)
        }
        if cancels { cancellation.cancel() }
        waiter?.resume(returning: nil)
    }
}

/// A decoded source kept in memory for the variants that follow: the image, the header it was decoded from, the size
/// it was asked for (`nil`: full size), and the other options that shaped it.
struct DecodedSource: Sendable {
    let image: Image
    let header: ImageHeader
    let size: ImageSize?
    let firstFrameOnly: Bool
    let pixelBudget: Int?

    init(image: Image, header: ImageHeader, size: ImageSize?, options: DecodingOptions) {
        self.image = image
        self.header = header
        self.size = size
        firstFrameOnly = options.firstFrameOnly
        pixelBudget = options.pixelBudget
    }

    /// Whether a decode with `options` at `size` would give this image or a smaller one: asked for a size that covers
    /// `size`, or decoded at least that large (the decoder scales to the smallest size at or above the one asked,
    /// so a need below the image it gave is served by it), keeping the same frames.
    func serves(_ size: ImageSize?, options: DecodingOptions) -> Bool {
        guard framesServe(options.firstFrameOnly), pixelBudget == options.pixelBudget else { return false }
        if SourceDecodes.size(self.size, covers: size) { return true }
        guard let size else { return false }
        let turned = image.orientation.swapsDimensions
        let (width, height) = turned ? (image.height, image.width) : (image.width, image.height)
        return width >= size.width && height >= size.height
    }

    /// Whether this image serves every need `other` serves.
    func covers(_ other: DecodedSource) -> Bool {
        framesServe(other.firstFrameOnly) && pixelBudget == other.pixelBudget
            && SourceDecodes.size(size, covers: other.size)
    }

    /// Whether this image has the frames a decode keeping the first frame only (`firstFrameOnly`), or every frame,
    /// would give: the same choice, or a source of one frame (a JPEG, or a decode of every frame that found one).
    private func framesServe(_ firstFrameOnly: Bool) -> Bool {
        firstFrameOnly == self.firstFrameOnly || header.format == .jpeg
            || (!self.firstFrameOnly && image.frames.count == 1)
    }
}
