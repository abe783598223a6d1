// AsyncHTTPClient alone, as ImageDownloader drives it (one `execute` per URL, the body collected into an array),
// with N tasks taking URLs from a shared list: what the HTTP client costs per request before any of Osprey's layers
// (compare_prefetch.py prints it beside nio-floor and curl).
//
//     ahc-floor URL_FILE CONNECTIONS   → prints the wall time in seconds and the bytes received
import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count >= 3, let connections = Int(arguments[2]) else {
    print("usage: ahc-floor URL_FILE CONNECTIONS")
    exit(2)
}
let urls = try String(contentsOfFile: arguments[1], encoding: .utf8).split(separator: "\n").map(String.init)
var configuration = HTTPClient.Configuration()
configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
let next = Atomic<Int>(0)
let start = ContinuousClock.now
let received = try await withThrowingTaskGroup(of: Int.self) { group in
    for _ in 0..<connections {
        group.addTask {
            var bytes = 0
            while case let index = next.add(1, ordering: .relaxed).oldValue, index < urls.count {
                let response = try await client.execute(HTTPClientRequest(url: urls[index]), timeout: .seconds(30))
                var body: [UInt8] = []
                for try await buffer in response.body {
                    buffer.withUnsafeReadableBytes { body.append(contentsOf: $0) }
                }
                bytes += body.count
            }
            return bytes
        }
    }
    var total = 0
    for try await bytes in group { total += bytes }
    return total
}
let elapsed = ContinuousClock.now - start
print(
    String(
        format: "%.4f s, %d bytes, %d requests",
        Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds), received, urls.count))
try await client.shutdown().get()
