import Testing

@testable import Osprey

/// The table of recent resampling weights: a geometry seen before gets the weights it would be made with, and
/// geometries that differ in any part never share an entry.
struct ResamplingWeightsTests {
    func same(_ a: ResamplingWeights, _ b: ResamplingWeights) -> Bool {
        a.starts == b.starts && a.counts == b.counts && a.taps == b.taps && a.weights == b.weights
    }

    @Test func cachedWeightsAreTheWeightsOfTheirGeometry() {
        let geometries: [(ResamplingFilter, Int, Double, Double, Int)] = [
            (.lanczos3, 720, 0, 720, 256), (.lanczos3, 720, 0.25, 719.5, 256), (.lanczos3, 720, 0, 720, 255),
            (.mitchell, 720, 0, 720, 256), (.lanczos3, 721, 0, 720, 256), (.box, 100, 3, 10, 40),
        ]
        // Twice over, and more geometries than the table holds in between, so that it starts over once.
        for round in 0..<2 {
            for (filter, source, start, length, output) in geometries {
                let cached = ResamplingWeights.cached(
                    filter: filter, sourceLength: source, start: start, length: length, outputLength: output)
                let made = ResamplingWeights(
                    filter: filter, sourceLength: source, start: start, length: length, outputLength: output)
                #expect(same(cached, made), "round \(round): \(filter) \(source) \(start) \(length) \(output)")
            }
            for output in 1...70 {
                _ = ResamplingWeights.cached(
                    filter: .bilinear, sourceLength: 500, start: 0, length: 500, outputLength: output)
            }
        }
        // Geometries a step apart differ: the table did not hand one the other's weights.
        let a = ResamplingWeights.cached(filter: .lanczos3, sourceLength: 720, start: 0, length: 720, outputLength: 256)
        let b = ResamplingWeights.cached(
            filter: .lanczos3, sourceLength: 720, start: 0.25, length: 719.5, outputLength: 256)
        #expect(!same(a, b))
    }
}
