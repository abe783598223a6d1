import Synchronization

/// Decodes an image while its bytes are still arriving, yielding previews.
///
/// Feed it each chunk as it arrives with ``append(_:)`` and ask for ``makePreview()``: it returns an image when there
/// is something new to show — a newly completed scan of a progressive JPEG, more rows of a baseline JPEG, PNG or
/// WebP, the whole of a JPEG XL at the detail its groups so far give (libjxl's progressive flush: from the first
/// groups of a lossy file, a blurred picture) — and `nil` otherwise. At most one preview decode runs at a time per image: a call made while another is
/// decoding returns `nil` at once. ``finish()`` decodes the complete data and never waits behind a preview.
///
/// ```swift
/// let decoder = IncrementalImageDecoder()
/// for try await chunk in body {
///     decoder.append(chunk)
///     if let preview = decoder.makePreview() { show(preview) }
/// }
/// let image = try decoder.finish()
/// ```
///
/// Previews are decoded from all the data so far with ``DecodingOptions/allowsPartialImages`` and
/// ``DecodingOptions/firstFrameOnly``: rows that have not arrived are grey (JPEG) or transparent (PNG, WebP).
public final class IncrementalImageDecoder: Sendable {
    /// How much the data must grow, relative to the last preview, before a baseline image is decoded again: 1/8 more,
    /// and at least 16 KiB. A progressive JPEG is previewed after every completed scan instead.
    public static let minimumGrowth = (fraction: 8, bytes: 16 << 10)

    private struct State {
        var data: [UInt8] = []
        var isPreviewing = false
        /// What the last preview showed: completed scans of a progressive JPEG, bytes otherwise.
        var shownProgress = 0
        /// Where the JPEG marker walk stopped, so each call reads only the bytes that arrived since.
        var scans = JPEGScanCounter()
    }

    private let state = Mutex(State())
    private let options: DecodingOptions
    private let decode: @Sendable ([UInt8], DecodingOptions) throws(CodecError) -> Image

    /// Makes a decoder; `options` apply to the final image (previews also allow partial data and take the first
    /// frame).
    public convenience init(options: DecodingOptions = DecodingOptions()) {
        self.init(options: options) { (data: [UInt8], options: DecodingOptions) throws(CodecError) -> Image in
            try ImageDecoder.decode(data, options: options)
        }
    }

    /// Makes a decoder that decodes with `decode` (tests use it to hold a preview decode in flight).
    init(
        options: DecodingOptions,
        decode: @escaping @Sendable ([UInt8], DecodingOptions) throws(CodecError) -> Image
    ) {
        self.options = options
        self.decode = decode
    }

    /// Adds bytes that arrived after those already appended.
    public func append(_ bytes: some Collection<UInt8>) {
        state.withLock { $0.data.append(contentsOf: bytes) }
    }

    /// The number of bytes appended so far.
    public var byteCount: Int { state.withLock { $0.data.count } }

    /// What decoding a preview of the data so far takes (``ImageDecoder/memoryEstimate(for:options:)``), once the
    /// header has arrived; `nil` before.
    public var previewEstimate: DecodingEstimate? {
        let data = state.withLock { $0.data }
        return try? ImageDecoder.memoryEstimate(for: data, options: previewOptions)
    }

    /// The options previews decode with: partial data allowed, the first frame only.
    private var previewOptions: DecodingOptions {
        var options = options
        options.allowsPartialImages = true
        options.firstFrameOnly = true
        return options
    }

    /// A preview of the data so far when there is something new to show and no other preview is being decoded;
    /// otherwise `nil`. A preview that fails to decode (too little data yet) is `nil` too.
    public func makePreview() -> Image? {
        let job = state.withLock { state -> (data: [UInt8], progress: Int)? in
            guard !state.isPreviewing else { return nil }
            let progress = Self.progress(of: state.data, coders: options.coders, scans: &state.scans)
            guard let progress, Self.isWorthShowing(progress, after: state.shownProgress) else { return nil }
            state.isPreviewing = true
            return (state.data, progress.value)
        }
        guard let job else { return nil }
        let preview = try? decode(job.data, previewOptions)
        state.withLock { state in
            state.isPreviewing = false
            if preview != nil { state.shownProgress = max(state.shownProgress, job.progress) }
        }
        return preview
    }

    /// Decodes all the data appended, with the decoder's options; never waits for a preview in flight.
    public func finish() throws(CodecError) -> Image {
        let data = state.withLock { $0.data }
        return try decode(data, options)
    }

    // MARK: Progress

    enum Progress {
        /// Completed scans of a progressive JPEG.
        case scans(Int)
        /// Bytes of any other image.
        case bytes(Int)

        var value: Int {
            switch self {
            case .scans(let count), .bytes(let count): count
            }
        }
    }

    /// What a preview of `data` would show, or `nil` when there is nothing to decode yet (no format, no scan).
    /// `scans` carries the JPEG marker walk from one call to the next.
    static func progress(
        of data: [UInt8], coders: ImageCoderRegistry = .shared, scans: inout JPEGScanCounter
    ) -> Progress? {
        switch coders.format(of: data) {
        case .unknown:
            return nil
        case .jpeg:
            var counter = scans
            data.withUnsafeBytes { counter.advance(over: $0) }
            scans = counter
            return counter.isProgressive ? .scans(counter.completed) : .bytes(data.count)
        default:
            return .bytes(data.count)
        }
    }

    static func isWorthShowing(_ progress: Progress, after shown: Int) -> Bool {
        switch progress {
        case .scans(let count):
            return count > shown
        case .bytes(let count):
            return count - shown >= max(shown / minimumGrowth.fraction, minimumGrowth.bytes)
        }
    }
}

/// Counts the complete scans of a JPEG by walking its markers: a scan is complete once a marker other than a restart
/// marker follows its entropy-coded data. The walk resumes where it stopped when called again with more of the same
/// data, so a growing download is read once in all.
struct JPEGScanCounter {
    /// Whether a progressive frame header (SOF2, SOF6, SOF10, SOF14) was seen.
    private(set) var isProgressive = false
    /// Scans whose entropy-coded data has ended.
    private(set) var completed = 0
    private var offset = 2  // after SOI
    private var isInEntropyData = false
    private var isFinished = false

    /// Walks `bytes` (all the data so far: the same prefix as before, plus what arrived) from where the last call
    /// stopped.
    mutating func advance(over bytes: UnsafeRawBufferPointer) {
        while !isFinished {
            if isInEntropyData {
                // Entropy-coded data: 0xFF is followed by 0x00 (stuffing) or a restart marker until the scan ends.
                while offset + 1 < bytes.count {
                    let next = bytes[offset + 1]
                    if bytes[offset] == 0xFF, next != 0x00, !(0xD0...0xD7).contains(next) {
                        completed += 1
                        isInEntropyData = false
                        break
                    }
                    offset += 1
                }
                if isInEntropyData { return }  // more data needed
                continue
            }
            guard offset + 4 <= bytes.count else { return }
            guard bytes[offset] == 0xFF else {
                isFinished = true
                return
            }
            let marker = bytes[offset + 1]
            if marker == 0xFF {  // fill byte
                offset += 1
                continue
            }
            if marker == 0xD9 {
                isFinished = true
                return
            }
            if (0xD0...0xD7).contains(marker) || marker == 0x01 {
                offset += 2
                continue
            }
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard length >= 2 else {
                isFinished = true
                return
            }
            if [0xC2, 0xC6, 0xCA, 0xCE].contains(marker) { isProgressive = true }
            offset += 2 + length
            if marker == 0xDA { isInEntropyData = true }
        }
    }

    /// The progressiveness and completed scans of a whole JPEG, in one walk.
    static func count(in bytes: UnsafeRawBufferPointer) -> (isProgressive: Bool, completed: Int) {
        var counter = JPEGScanCounter()
        counter.advance(over: bytes)
        return (counter.isProgressive, counter.completed)
    }
}
