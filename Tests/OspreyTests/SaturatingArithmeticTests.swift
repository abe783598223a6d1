import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

/// The Double → Int conversions and size products a caller's value can reach: each saturates or is clamped where
/// `Int(_:)` or `*` would trap and end the process.
@Suite struct SaturatingArithmeticTests {
    @Test("Int(saturating:) clamps infinities and products past 2^63, reads NaN as 0, and truncates like Int(_:)")
    func conversion() {
        #expect(Int(saturating: .infinity) == .max)
        #expect(Int(saturating: -.infinity) == .min)
        #expect(Int(saturating: 0x1p63) == .max)
        #expect(Int(saturating: Double(Int.max)) == .max)
        #expect(Int(saturating: -0x1p63) == .min)
        #expect(Int(saturating: .nan) == 0)
        #expect(Int(saturating: 2.9) == 2)
        #expect(Int(saturating: -2.9) == -2)
        #expect(Int(saturating: 0x1p62) == 1 << 62)
    }

    @Test("a memory cache with no cost limit and an entry fraction of 1 or more keeps entries (Nuke's trimToCost)")
    func memoryCacheWithoutALimit() {
        // Given a cache whose cost limit is Int.max and whose largest entry may take all of it (or more)
        for fraction in [1.0, 2.0, .infinity] {
            var configuration = MemoryCache<String, Int>.Configuration(costLimit: .max)
            configuration.maximumEntryCostFraction = fraction
            configuration.respondsToMemoryPressure = false
            let cache = MemoryCache<String, Int>(configuration: configuration)
            // When entries are stored and the cache is trimmed
            cache.setValue(1, forKey: "a", cost: 100)
            cache.setValue(2, forKey: "b", cost: 100)
            cache.setValue(3, forKey: "c", cost: 100)
            #expect(cache.totalCost == 300)
            cache.trim(toCost: 150)
            // Then the least recently used go first, as with any limit
            #expect(cache.value(forKey: "a") == nil)
            #expect(cache.value(forKey: "b") == nil)
            #expect(cache.value(forKey: "c") == 3)
        }
        // A NaN or negative fraction caches nothing rather than trapping.
        for fraction in [Double.nan, -1] {
            var configuration = MemoryCache<String, Int>.Configuration(costLimit: .max)
            configuration.maximumEntryCostFraction = fraction
            configuration.respondsToMemoryPressure = false
            let cache = MemoryCache<String, Int>(configuration: configuration)
            cache.setValue(1, forKey: "a", cost: 1)
            #expect(cache.value(forKey: "a") == nil)
        }
    }

    @Test("a disk cache's size target ratio past any size, or NaN, cleans without trapping")
    func diskCacheTargetRatio() async throws {
        let temporary = TemporaryDirectory()
        for ratio in [Double.infinity, 1e300, .nan] {
            var configuration = DiskCache.Configuration(namespace: "ratio\(ratio)")
            configuration.baseDirectory = temporary.path
            configuration.sizeLimit = 1_000
            configuration.sizeTargetRatio = ratio
            configuration.cleaningInterval = nil
            let cache = DiskCache(configuration: configuration, clock: ContinuousClock())
            // 1,200 bytes: over the limit, so the cleaning (the one the third store starts, or this one) trims.
            for index in 0..<3 { try await cache.store([UInt8](repeating: 7, count: 400), forKey: "k\(index)") }
            _ = await cache.clean()
            // An infinite target removes nothing; NaN's target is 0, which removes all.
            let expected = ratio.isNaN ? 0 : 3
            let count = await cache.totals().count
            #expect(count == expected, "ratio \(ratio)")
            await cache.close()
        }
    }

    @Test("a canvas past any size, extended to or to an aspect ratio, is an error rather than a trap")
    func hugeCanvas() throws {
        let image = try Image(pixels: Self.gradient(width: 32, height: 32))
        let processors: [any ImageProcessing] = [
            ImageProcessors.Extend(width: .max, height: .max, anchor: .center),
            ImageProcessors.ExtendToAspectRatio(width: .max, height: 1),
            ImageProcessors.ExtendToAspectRatio(width: 1, height: .max),
        ]
        for processor in processors {
            #expect(throws: (any Error).self, "\(processor.identifier)") { try processor.process(image) }
        }
    }

    @Test("sharpening by an infinite or huge amount is sharpening by the largest visible one")
    func sharpenAmount() throws {
        let image = try Image(pixels: Self.gradient(width: 32, height: 32))
        let strongest = try ImageProcessors.Sharpen(sigma: 1, amount: 64).process(image)
        for amount in [Double.infinity, 1e300, 1e18] {
            let sharpened = try ImageProcessors.Sharpen(sigma: 1, amount: amount).process(image)
            #expect(sharpened.frames[0].pixels == strongest.frames[0].pixels, "amount \(amount)")
        }
    }

    @Test("a reducing gap of zero or near it averages by the largest factor instead of trapping")
    func resizeReducingGap() throws {
        let image = try Image(pixels: Self.gradient(width: 600, height: 400))
        for gap in [0, 1e-300, Double.leastNonzeroMagnitude] {
            let resized = try ImageProcessors.Resize(width: 30, height: 20, reducingGap: gap).process(image)
            #expect((resized.width, resized.height) == (30, 20), "gap \(gap)")
        }
    }

    @Test("pixel counts of hostile headers saturate: 2^32 × 2^32 is Int.max, not a trap")
    func pixelCounts() {
        #expect(ImageSize(width: 1 << 32, height: 1 << 32).pixelCount == .max)
        #expect(ImageSize(width: 2_147_483_586, height: 1_073_741_793).pixelCount == 2_305_842_876_069_709_698)
        #expect(ImageSize(width: 3, height: 4).pixelCount == 12)
    }

    /// An RGB gradient with a little pattern, so that sharpening and averaging change it.
    static func gradient(width: Int, height: Int) throws -> PixelBuffer {
        var bytes = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let index = (y * width + x) * 3
                bytes[index] = UInt8(x * 255 / max(width - 1, 1))
                bytes[index + 1] = UInt8(y * 255 / max(height - 1, 1))
                bytes[index + 2] = (x + y) % 4 == 0 ? 250 : 20
            }
        }
        return try PixelBuffer(width: width, height: height, format: .rgb8, bytes: bytes)
    }
}
