import Foundation
import Testing

@testable import Osprey

/// The perceptual quality search's steps on score curves made here: it finds the lowest quality that reaches the
/// target (or one scoring just above it), in few encodes, and stops where the target is out of reach.
struct PerceptualSearchTests {
    /// Runs a search on `curve` from `start` (or from where a probe scoring `probe` at `start` puts it): the quality
    /// chosen and the qualities tried.
    func search(
        _ curve: (Int) -> Double, target: Double, start: Int, probe: Double? = nil
    ) -> (chosen: Int, tried: [Int]) {
        var search = PerceptualSearch(target: target, start: start, probe: probe)
        var tried: [Int] = []
        while let quality = search.next {
            tried.append(quality)
            search.record(quality, score: curve(quality))
        }
        return (search.chosen, tried)
    }

    @Test(arguments: [0.4, 0.7, 1.0, 1.5])
    func findsTheLowestPassingQualityOnALine(slope: Double) {
        // score = 80 at quality 75 whatever the slope; the start is the median, 83 (JPEG's at 80 is 83.2).
        let curve = { (quality: Int) in 80 + (Double(quality) - 75) * slope }
        let (chosen, tried) = search(curve, target: 80, start: 83)
        #expect(curve(chosen) >= 80)
        #expect(chosen - 75 <= 2, "\(tried)")
        #expect(tried.count <= 3, "\(tried) \(tried.map(curve))")
    }

    @Test(arguments: [0.4, 0.7, 1.0, 1.5])
    func aProbeSendsTheFirstEncodeTheRightWay(slope: Double) {
        // The same lines, a probe scoring two points under the real encoder (as a faster effort may).
        let curve = { (quality: Int) in 80 + (Double(quality) - 75) * slope }
        for start in [60, 90] {
            let (chosen, tried) = search(curve, target: 80, start: start, probe: curve(start) - 2)
            #expect(curve(chosen) >= 80 && curve(chosen) - 80 <= PerceptualSearch.closeEnough, "\(tried)")
            // Towards the boundary: up from under it, down from above it.
            #expect(start < 75 ? tried[0] > start : tried[0] < start, "\(tried)")
            #expect(tried.count <= 3, "\(tried) \(tried.map(curve))")
        }
    }

    @Test func aPassingScoreCloseToTheTargetEndsTheSearch() {
        // 81 at the start: within closeEnough of 80, so nothing lower is tried although 76 would pass.
        let curve = { (quality: Int) in 80 + (Double(quality) - 76) * 0.2 }
        let (chosen, tried) = search(curve, target: 80, start: 81)
        #expect(tried == [81] && chosen == 81)
        // 83.5 is not: the search goes down.
        let (lower, steps) = search(curve, target: 80, start: 93)
        #expect(steps.count > 1 && lower < 93 && curve(lower) >= 80, "\(steps)")
    }

    @Test func aCurvedScaleIsFoundWithinSixEncodes() {
        // Scores that rise fast at low quality and flatten (as SSIMULACRA 2 does), target near the top.
        let curve = { (quality: Int) in 100 - 120 * exp(-Double(quality) / 28) }
        let (chosen, tried) = search(curve, target: 85, start: 60)
        // The lowest passing quality, or one step above it (the search stops one untried step from the boundary).
        #expect(curve(chosen) >= 85 && curve(chosen - 2) < 85, "\(chosen), \(tried)")
        #expect(tried.count <= 6)
        #expect(Set(tried).count == tried.count, "a quality tried twice: \(tried)")
    }

    @Test func anUnreachableTargetEndsAtTheBestScoreTried() {
        // Never above 78: the search tries up to 100 and keeps the best.
        let curve = { (quality: Int) in min(Double(quality) * 0.8, 78) }
        let (chosen, tried) = search(curve, target: 80, start: 85)
        #expect(tried.contains(100) || tried.count == PerceptualSearch.attempts)
        #expect(curve(chosen) == 78)
        // Always above: the lowest quality tried is 1 at most a few steps away.
        let easy = search({ _ in 95 }, target: 80, start: 70)
        #expect(easy.chosen == easy.tried.min())
        #expect(easy.tried.count <= PerceptualSearch.attempts)
    }

    @Test func aJumpInTheCurveDoesNotMisleadIt() {
        // JPEG switches to full-resolution colour at 90: the score jumps there.
        let curve = { (quality: Int) in quality < 90 ? 60 + Double(quality) * 0.2 : 84 + Double(quality - 90) * 0.3 }
        let (chosen, tried) = search(curve, target: 80, start: 83)
        // 90, or 91 when the search stopped one untried step above the boundary.
        #expect(chosen == 90 || chosen == 91, "\(tried)")
    }
}
