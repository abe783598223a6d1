// Loads through ImageManager's public async API for compare_manager.py, printing one JSON line:
//
//   manager-benchmark memory <image-file> <loads>        warm loads from memory: p50/p99 latency, loads/s
//   manager-benchmark disk <url-file> <cache-dir>         every URL's bytes stored on disk first, then each loaded
//                                                         from disk (memory off): p50 latency, images/s
//   manager-benchmark cold <url-file> <cache-dir> [first] every URL loaded from the network into an empty cache
//                                                         (download, decode, keep): images/s; `first` decodes
//                                                         the first frame of animations only, as Pillow's load()
//   manager-benchmark decode <url-file> <root> [first]    each URL's file (<root> + its path) decoded on one thread
//                                                         from bytes in memory, kept: the decode work alone
import Foundation
import Osprey
import OspreyCodecs

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func manager(cacheDirectory: String, inMemory: Bool = true) -> ImageManager {
    var configuration = ImageCache.Configuration(namespace: "bench")
    configuration.disk.baseDirectory = cacheDirectory
    configuration.disk.cleaningInterval = nil
    configuration.storesInMemory = inMemory
    configuration.memory.respondsToMemoryPressure = false
    return ImageManager(cache: ImageCache(configuration: configuration), downloader: ImageDownloader.shared)
}

func urls(in file: String) -> [URL] {
    guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { fail("cannot read \(file)") }
    return text.split(whereSeparator: \.isNewline).compactMap { URL(string: String($0)) }
}

func report(_ fields: [String: Any]) {
    guard let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else {
        fail("cannot encode \(fields)")
    }
    print(String(decoding: data, as: UTF8.self))
}

let arguments = CommandLine.arguments
guard arguments.count >= 4 else { fail("usage: manager-benchmark memory|disk|cold ...") }
let clock = ContinuousClock()

switch arguments[1] {
case "memory":
    guard let contents = FileManager.default.contents(atPath: arguments[2]) else { fail("cannot read \(arguments[2])") }
    let bytes = [UInt8](contents)
    let loads = Int(arguments[3]) ?? 200_000
    let directory = NSTemporaryDirectory() + "osprey-manager-bench-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let manager = manager(cacheDirectory: directory)
    let url = URL(string: "http://127.0.0.1:1/warm.jpg")!
    try await manager.store(try ImageDecoder.decode(bytes), data: bytes, for: url, toDisk: false)
    let request = try ImageRequest(url: url)
    var byRequest: [Double] = []
    var byURL: [Double] = []
    byRequest.reserveCapacity(loads)
    byURL.reserveCapacity(loads)
    for _ in 0..<1_000 { _ = try await manager.image(for: request) }
    let start = clock.now
    for _ in 0..<loads {
        let before = clock.now
        let result = try await manager.image(for: request)
        byRequest.append(seconds(before.duration(to: clock.now)))
        precondition(result.cacheType == .memory)
    }
    let total = seconds(start.duration(to: clock.now))
    for _ in 0..<loads {
        let before = clock.now
        _ = try await manager.image(for: url)
        byURL.append(seconds(before.duration(to: clock.now)))
    }
    byRequest.sort()
    byURL.sort()
    report([
        "loads": loads, "p50_us": percentile(byRequest, 0.5) * 1e6, "p99_us": percentile(byRequest, 0.99) * 1e6,
        "url_p50_us": percentile(byURL, 0.5) * 1e6, "loads_per_second": Double(loads) / total,
    ])

case "disk":
    let list = urls(in: arguments[2])
    let directory = arguments[3]
    let filler = manager(cacheDirectory: directory, inMemory: false)
    // Store the bytes as the origin would have sent them, fetched once.
    var stored = 0
    for url in list {
        if let result = try? await filler.image(for: url, options: [.waitStoreCache]), result.data != nil {
            stored += 1
        }
    }
    let manager = manager(cacheDirectory: directory, inMemory: false)
    var latencies: [Double] = []
    let start = clock.now
    for url in list {
        let before = clock.now
        if let result = try? await manager.image(for: url), result.cacheType == .disk {
            latencies.append(seconds(before.duration(to: clock.now)))
        }
    }
    let total = seconds(start.duration(to: clock.now))
    latencies.sort()
    report([
        "images": latencies.count, "stored": stored, "p50_ms": percentile(latencies, 0.5) * 1e3,
        "images_per_second": Double(latencies.count) / total,
    ])

case "cold":
    let list = urls(in: arguments[2])
    let manager = manager(cacheDirectory: arguments[3])
    let options: ImageRequest.Options = arguments.count > 4 && arguments[4] == "first" ? [.decodeFirstFrameOnly] : []
    let start = clock.now
    let (loaded, failed) = await withTaskGroup(of: Bool.self) { group in
        for url in list { group.addTask { (try? await manager.image(for: url, options: options)) != nil } }
        var counts = (loaded: 0, failed: 0)
        for await ok in group {
            if ok { counts.loaded += 1 } else { counts.failed += 1 }
        }
        return counts
    }
    let total = seconds(start.duration(to: clock.now))
    report(["images": loaded, "failures": failed, "seconds": total, "images_per_second": Double(loaded) / total])

case "decode":
    // The cold load's images decoded on one thread from bytes already in memory, and kept: the work a cold load
    // cannot avoid, which bounds what two cores can reach.
    let root = arguments[3]
    let blobs = urls(in: arguments[2]).map { url in
        guard let data = FileManager.default.contents(atPath: root + url.path) else { fail("cannot read \(url.path)") }
        return [UInt8](data)
    }
    var options = DecodingOptions()
    options.firstFrameOnly = arguments.count > 4 && arguments[4] == "first"
    var kept: [Image] = []
    kept.reserveCapacity(blobs.count)
    let start = clock.now
    for bytes in blobs {
        if let image = try? ImageDecoder.decode(bytes, options: options) { kept.append(image) }
    }
    let total = seconds(start.duration(to: clock.now))
    report([
        "images": kept.count, "failures": blobs.count - kept.count, "seconds": total,
        "images_per_second": Double(kept.count) / total,
    ])

default:
    fail("unknown mode \(arguments[1])")
}
