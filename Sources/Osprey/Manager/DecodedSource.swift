import OspreyCodecs
import Synchronization

/// What must agree for two jobs to share a decode (see `JobTable+Decodes.swift`): the source, and the decoding options
/// other than the size and the first-frame choice (which the decode's ``DecodeAsk`` compares).
struct DecodeSource: Hashable, Sendable {
    let baseKey: String
    let pixelBudget: Int?
    /// Jobs with loaders of their own may get other bytes for one URL.
    let loader: ObjectIdentifier
}

/// The manager's decode counts, for ``ImageManager/statistics`` and the tests.
final class DecodeCounts: Sendable {
    private let decodes = Atomic<Int>(0)
    private let shared = Atomic<Int>(0)
    private let cancelled = Atomic<Int>(0)

    /// How many decodes ran (shared or not, of downloaded or stored bytes).
    var decodeCount: Int { decodes.load(ordering: .relaxed) }
    /// How many jobs used a decode another job ran.
    var sharedCount: Int { shared.load(ordering: .relaxed) }
    /// How many decodes stopped early because every job waiting for them left (``CodecError/cancelled``).
    var cancelledCount: Int { cancelled.load(ordering: .relaxed) }

    /// Counts a decode started.
    func countDecode() {
        decodes.wrappingAdd(1, ordering: .relaxed)
    }

    /// Counts a job that took another's decode.
    func countShared() {
        shared.wrappingAdd(1, ordering: .relaxed)
    }

    /// Counts the end of a decode: a cancelled one among ``cancelledCount``.
    func ended(_ outcome: Result<Image, CodecError>) {
        if case .failure(.cancelled) = outcome { cancelled.wrappingAdd(1, ordering: .relaxed) }
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
        if SourceDecodeSize.size(self.size, covers: size) { return true }
        guard let size else { return false }
        let turned = image.orientation.swapsDimensions
        let (width, height) = turned ? (image.height, image.width) : (image.width, image.height)
        return width >= size.width && height >= size.height
    }

    /// Whether this image serves every need `other` serves.
    func covers(_ other: DecodedSource) -> Bool {
        framesServe(other.firstFrameOnly) && pixelBudget == other.pixelBudget
            && SourceDecodeSize.size(size, covers: other.size)
    }

    /// Whether this image has the frames a decode keeping the first frame only (`firstFrameOnly`), or every frame,
    /// would give: the same choice, or a source of one frame (a JPEG, or a decode of every frame that found one).
    private func framesServe(_ firstFrameOnly: Bool) -> Bool {
        firstFrameOnly == self.firstFrameOnly || header.format == .jpeg
            || (!self.firstFrameOnly && image.frames.count == 1)
    }
}
