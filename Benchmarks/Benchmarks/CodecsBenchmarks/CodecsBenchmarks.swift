import Benchmark
import OspreyCodecs
import OspreyTesting

/// Format detection and header reading: the first two things every load and every proxy request does with a body.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, .throughput],
        // 1,000 calls per sample: a single call is shorter than the harness's own per-sample overhead.
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 100_000
    )

    let samples: [(String, [UInt8])] = [
        ("jpeg", SyntheticImages.jpegHeader(width: 4_000, height: 3_000)),
        ("png", SyntheticImages.png(width: 64, height: 64)),
        ("gif", SyntheticImages.gifHeader(width: 500, height: 500)),
        ("webp", SyntheticImages.webpLosslessHeader(width: 2_000, height: 1_000)),
    ]

    for (name, bytes) in samples {
        Benchmark("ImageFormat(sniffing:) \(name)") { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(ImageFormat(sniffing: bytes))
            }
        }
        Benchmark("ImageHeader(reading:) \(name)") { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try ImageHeader(reading: bytes))
            }
        }
    }

    Benchmark("PixelBuffer 4000×3000 RGBA allocate", configuration: .init(scalingFactor: .one)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try PixelBuffer(width: 4_000, height: 3_000, format: .rgba8))
        }
    }
}
