// cache-benchmark
//
// The Caches issue's measurements, on a release build. Memory cache: hit latency p50/p99 with 10,000 entries (each hit
// timed on its own, the timer's own cost measured and subtracted), and hit throughput with 1 and 2 tasks hammering the
// same cache (the ratio shows whether concurrent hits scale or queue behind a lock). Disk cache (DiskBenchmarks.swift):
// a 100 KB hit beside a plain read of the same file, store throughput, and cleaning 100,000 entries to half beside the
// seeds' algorithm. Prints the numbers and the targets with PASS/FAIL; exits 1 when one is missed. HIT_ONLY=1 runs
// only the disk hit, with 200,000 blocking hits, for profiling it (perf record).
import Foundation
import Osprey

let entryCount = 10_000
let timedHits = 1_000_000
let throughputHits = 4_000_000

func nanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

func makeCache(shardCount: Int) -> MemoryCache<String, Int> {
    var configuration = MemoryCache<String, Int>.Configuration(costLimit: 1 << 30)
    configuration.shardCount = shardCount
    configuration.respondsToMemoryPressure = false
    let cache = MemoryCache<String, Int>(configuration: configuration)
    for index in 0..<entryCount { cache.setValue(index, forKey: "https://example.com/images/\(index).jpg", cost: 1000) }
    return cache
}

let keys = (0..<entryCount).map { "https://example.com/images/\($0).jpg" }

/// A key order that jumps around the cache like real traffic, the same for every run.
func order(seed: UInt64, count: Int) -> [Int] {
    var state = seed
    return (0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(entryCount))
    }
}

/// p50 and p99 of single hits, in nanoseconds, less the cost of reading the clock twice.
func latency(_ cache: MemoryCache<String, Int>) -> (p50: Double, p99: Double) {
    var overhead: [UInt64] = []
    for _ in 0..<100_000 {
        let start = nanoseconds()
        overhead.append(nanoseconds() - start)
    }
    overhead.sort()
    let timer = Double(overhead[overhead.count / 2])
    var samples: [UInt64] = []
    samples.reserveCapacity(timedHits)
    var found = 0
    for index in order(seed: 1, count: timedHits) {
        let key = keys[index]
        let start = nanoseconds()
        found &+= cache.value(forKey: key) ?? 0
        samples.append(nanoseconds() - start)
    }
    precondition(found > 0)
    samples.sort()
    return (
        max(Double(samples[samples.count / 2]) - timer, 0), max(Double(samples[samples.count * 99 / 100]) - timer, 0)
    )
}

/// Hits per second with `tasks` threads hitting the cache at once, each doing `throughputHits / tasks` hits.
func throughput(_ cache: MemoryCache<String, Int>, tasks: Int) -> Double {
    let perTask = throughputHits / tasks
    let orders = (0..<tasks).map { order(seed: UInt64($0 + 7), count: perTask) }
    let group = DispatchGroup()
    let start = nanoseconds()
    for task in 0..<tasks {
        group.enter()
        Thread.detachNewThread {
            var found = 0
            for index in orders[task] { found &+= cache.value(forKey: keys[index]) ?? 0 }
            precondition(found > 0)
            group.leave()
        }
    }
    group.wait()
    return Double(perTask * tasks) / (Double(nanoseconds() - start) / 1e9)
}

var failures: [String] = []
print("memory cache, \(entryCount) entries, String keys")
for shards in ProcessInfo.processInfo.environment["HIT_ONLY"] != nil ? [] : [16, 1] {
    let cache = makeCache(shardCount: shards)
    let (p50, p99) = latency(cache)
    let one = (0..<3).map { _ in throughput(cache, tasks: 1) }.max()!
    let two = (0..<3).map { _ in throughput(cache, tasks: 2) }.max()!
    let label = shards == 1 ? "1 lock (for comparison)" : "\(shards) shards (default)"
    print(
        "  \(label): hit p50 \(Int(p50)) ns, p99 \(Int(p99)) ns; 1 task \(Int(one / 1e6)) M hits/s, "
            + "2 tasks \(Int(two / 1e6)) M hits/s (\(String(format: "%.2f", two / one))x)")
    if shards == 16 {
        if p50 >= 1000 { failures.append("hit p50 \(Int(p50)) ns (target < 1 µs)") }
        if two / one <= 1.0 { failures.append("2 tasks scale \(String(format: "%.2f", two / one))x (target > 1x)") }
    }
}
failures += try await diskBenchmarks()
print(failures.isEmpty ? "targets: PASS" : "targets: FAIL\n  " + failures.joined(separator: "\n  "))
exit(failures.isEmpty ? 0 : 1)
