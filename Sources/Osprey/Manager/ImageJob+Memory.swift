import OspreyCodecs

// What a job reserves from the manager's memory budget before it decodes: the decoder's peak, or the decoded image
// plus what the transform hook and the processors hold while they run, whichever is larger. The reservation lasts
// until the final image is made; the image then belongs to the caller and the memory cache, which has its own limit.
extension ImageJob {
    /// Reserves from the manager's budget what decoding `bytes` and processing the result will take (nothing without
    /// a budget, or when the header cannot be read: the decode then fails before allocating).
    func reserveMemory(for bytes: [UInt8]) async -> Result<MemoryBudget.Reservation?, ImageError> {
        guard let budget = manager.configuration.memoryBudget, let bytesNeeded = memoryNeeded(for: bytes) else {
            return .success(nil)
        }
        return await Self.reserve(bytesNeeded, of: budget).map { $0 }
    }

    /// `count` bytes of `budget`, waited for while others hold it; its refusal as the load's error (a cancelled wait
    /// is a cancelled load).
    static func reserve(_ count: Int, of budget: MemoryBudget) async -> Result<MemoryBudget.Reservation, ImageError> {
        do throws(MemoryBudget.Refusal) {
            return .success(try await budget.reserve(count))
        } catch .cancelled {
            return .failure(.cancelled)
        } catch {
            return .failure(.insufficientMemory(error))
        }
    }

    /// The bytes to reserve for `bytes`, or `nil` when its header cannot be read.
    func memoryNeeded(for bytes: [UInt8]) -> Int? {
        guard let estimate = decoder.estimate(bytes) else { return nil }
        let transforms = manager.configuration.transformDownloadedImage != nil
        let processing = Self.processingBytes(after: estimate, processors: request.processors, transforms: transforms)
        return max(estimate.peakBytes, ImageDecoder.saturating(sum: estimate.imageBytes, processing))
    }

    /// The most the transform hook (`transforms`) and `processors` hold at once beside the decoded image, which the
    /// job keeps until the end: a step's input (once it is not the decoded image) and its output. A resize is counted
    /// by its plan (its output and the block-averaged copy it may make first); any other step as an image of its
    /// input's size with four channels, the most a processor adds.
    static func processingBytes(
        after estimate: DecodingEstimate, processors: [any ImageProcessing], transforms: Bool
    ) -> Int {
        var (width, height, channels) = (estimate.width, estimate.height, estimate.channels)
        let frames = estimate.frameCount
        var inputBytes = 0  // the decoded image itself is counted by the caller
        var peak = 0
        var steps: [(any ImageProcessing)?] = transforms ? [nil] : []
        steps += processors.map { Optional($0) }
        for step in steps {
            let resize = (step as? ImageProcessors.Resize) ?? (step as? ImageProcessors.Downsample)?.resize
            var stepBytes: Int
            if let resize, let plan = try? resize.plan(sourceWidth: width, sourceHeight: height) {
                let (factorX, factorY) = resize.reductionFactors(plan)
                let reduced =
                    factorX > 1 || factorY > 1
                    ? ImageDecoder.saturating(
                        PixelBuffer.reduced(width, by: factorX), PixelBuffer.reduced(height, by: factorY), channels)
                    : 0
                (width, height) = (plan.width, plan.height)
                let outputBytes = ImageDecoder.saturating(width, height, channels, frames)
                stepBytes = ImageDecoder.saturating(sum: outputBytes, reduced)
                peak = max(peak, ImageDecoder.saturating(sum: inputBytes, stepBytes))
                inputBytes = outputBytes
            } else if resize != nil {
                continue  // a resize that leaves the image as it is, or that will throw
            } else {
                channels = 4
                stepBytes = ImageDecoder.saturating(width, height, channels, frames)
                peak = max(peak, ImageDecoder.saturating(sum: inputBytes, stepBytes))
                inputBytes = stepBytes
            }
        }
        return peak
    }
}
