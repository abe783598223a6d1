// The floor of an HTTP/1.1 client on SwiftNIO alone, for the prefetch comparison (compare_prefetch.py): keep-alive
// connections to one origin, each with NIO's HTTP/1.1 codec and one handler that sends the next GET when a
// response ends and collects the body into an array, as a download does. No AsyncHTTPClient, no Swift
// concurrency, no cache: what any Swift client built on NIO pays per request at least. With a cache directory, each
// body is also stored in Osprey's DiskCache from a task, as a prefetch stores it: what a prefetch on such a client
// would pay at least. With an output directory too, each body is then written to a file of its own there, as curl
// writes one (open, write, close; no temporary name): what a fetch that writes the originals would pay at least.
//
//     nio-floor URL_FILE CONNECTIONS [THREADS] [CACHE_DIR] [OUTPUT_DIR]
//         → prints the wall time in seconds and the bytes received
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Osprey

/// The URLs still to fetch, shared by every connection (taken on their event loops, so behind a lock).
final class Work: @unchecked Sendable {  // Owns a lock around the queue it hands out.
    private let lock = NSLock()
    private var paths: [String]
    private var bytes = 0
    private var finished = 0
    private let total: Int
    private let done: EventLoopPromise<Void>

    init(paths: [String], done: EventLoopPromise<Void>) {
        self.paths = paths.reversed()
        self.total = paths.count
        self.done = done
    }

    func next() -> String? {
        lock.lock()
        defer { lock.unlock() }
        return paths.popLast()
    }

    func finish(bytes count: Int) {
        lock.lock()
        bytes += count
        finished += 1
        let all = finished == total
        lock.unlock()
        if all { done.succeed() }
    }

    /// Stores `body` under `key` in `cache` from a task, then writes it to the file `output` when one is given, then
    /// counts the request finished.
    func store(_ body: [UInt8], forKey key: String, in cache: DiskCache, output: String?) {
        Task {
            try? await cache.store(body, forKey: key)
            if let output {
                let descriptor = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                if descriptor >= 0 {
                    _ = body.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                    close(descriptor)
                }
            }
            self.finish(bytes: body.count)
        }
    }

    var received: Int {
        lock.lock()
        defer { lock.unlock() }
        return bytes
    }
}

final class Fetcher: ChannelInboundHandler, @unchecked Sendable {  // Confined to its channel's event loop.
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    let work: Work
    let host: String
    let cache: DiskCache?
    let outputDirectory: String?
    var path = ""
    var body: [UInt8] = []

    init(work: Work, host: String, cache: DiskCache?, outputDirectory: String?) {
        self.work = work
        self.host = host
        self.cache = cache
        self.outputDirectory = outputDirectory
    }

    func channelActive(context: ChannelHandlerContext) {
        sendNext(context: context)
    }

    func sendNext(context: ChannelHandlerContext) {
        guard let path = work.next() else {
            context.close(promise: nil)
            return
        }
        self.path = path
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path)
        head.headers.add(name: "Host", value: host)
        head.headers.add(name: "Accept", value: "image/avif,image/webp,image/*;q=0.8")
        head.headers.add(name: "User-Agent", value: "nio-floor")
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            body = []
            if let length = head.headers.first(name: "Content-Length").flatMap(Int.init) {
                body.reserveCapacity(length)
            }
        case .body(let buffer):
            buffer.withUnsafeReadableBytes { body.append(contentsOf: $0) }
        case .end:
            if let cache {
                let output = outputDirectory.map { "\($0)/\(path.split(separator: "=").last ?? "image")" }
                work.store(body, forKey: host + path, in: cache, output: output)
            } else {
                work.finish(bytes: body.count)
            }
            sendNext(context: context)
        }
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, let connections = Int(arguments[2]) else {
    print("usage: nio-floor URL_FILE CONNECTIONS [THREADS] [CACHE_DIR] [OUTPUT_DIR]")
    exit(2)
}
let threads = arguments.count > 3 ? Int(arguments[3]) ?? 2 : System.coreCount
let urls = try String(contentsOfFile: arguments[1], encoding: .utf8).split(separator: "\n").compactMap {
    URL(string: String($0))
}
guard let first = urls.first, let host = first.host, let port = first.port else { exit(2) }
let paths = urls.map { url in url.path + (url.query.map { "?" + $0 } ?? "") }

var cacheConfiguration = DiskCache.Configuration()
cacheConfiguration.baseDirectory = arguments.count > 4 ? arguments[4] : ""
let cache = arguments.count > 4 ? DiskCache(configuration: cacheConfiguration) : nil
let outputDirectory = arguments.count > 5 ? arguments[5] : nil
if let outputDirectory {
    try FileManager.default.createDirectory(atPath: outputDirectory, withIntermediateDirectories: true)
}

let start = ContinuousClock.now
let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
let done = group.next().makePromise(of: Void.self)
let work = Work(paths: paths, done: done)
for _ in 0..<connections {
    let bootstrap = ClientBootstrap(group: group).channelInitializer { channel in
        channel.pipeline.addHTTPClientHandlers().flatMap {
            channel.pipeline.addHandler(
                Fetcher(work: work, host: "\(host):\(port)", cache: cache, outputDirectory: outputDirectory))
        }
    }
    _ = bootstrap.connect(host: host, port: port)
}
try done.futureResult.wait()
let elapsed = ContinuousClock.now - start
print(
    String(
        format: "%.4f s, %d bytes, %d requests",
        Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds), work.received, paths.count))
try group.syncShutdownGracefully()
