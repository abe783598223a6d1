// Downloads a list of URLs at a fixed concurrency with Osprey's ImageDownloader or with Foundation's URLSession, and
// prints one JSON line: requests, bytes, wall seconds and CPU seconds of this process. compare_downloads.py runs it
// beside curl and aiohttp against the same local nginx.
//
//   download-benchmark osprey|urlsession CONCURRENCY URL-LIST-FILE
//   download-benchmark coalesce COUNT URL     (COUNT concurrent requests for one URL through one ImageDownloader)

import Foundation
import Osprey

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct Measurement: Encodable {
    var requests = 0
    var failures = 0
    var bytes = 0
    var seconds = 0.0
    var cpuSeconds = 0.0
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    return user + system
}

func measure(_ body: () async throws -> (requests: Int, failures: Int, bytes: Int)) async rethrows -> Measurement {
    let cpu = cpuSeconds()
    let start = ContinuousClock.now
    let (requests, failures, bytes) = try await body()
    let elapsed = ContinuousClock.now - start
    let (seconds, attoseconds) = elapsed.components
    return Measurement(
        requests: requests, failures: failures, bytes: bytes,
        seconds: Double(seconds) + Double(attoseconds) / 1e18, cpuSeconds: cpuSeconds() - cpu)
}

/// Every URL through one ImageDownloader limited to `concurrency` transfers: all are queued at once, as a caller would.
func osprey(_ urls: [URL], concurrency: Int) async throws -> Measurement {
    var configuration = ImageDownloader.Configuration()
    configuration.maxConcurrentDownloads = concurrency
    return try await withImageDownloader(configuration: configuration) { downloader in
        await measure {
            let tasks = urls.map { downloader.download(DownloadRequest(url: $0), progress: nil) }
            var bytes = 0
            var failures = 0
            for task in tasks {
                do { bytes += try await task.response.body.count } catch { failures += 1 }
            }
            return (urls.count, failures, bytes)
        }
    }
}

/// Every URL through one URLSession, at most `concurrency` tasks at once.
func urlSession(_ urls: [URL], concurrency: Int) async -> Measurement {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.httpMaximumConnectionsPerHost = concurrency
    configuration.urlCache = nil
    let session = URLSession(configuration: configuration)
    defer { session.invalidateAndCancel() }
    return await measure {
        await withTaskGroup(of: Int?.self) { group in
            var next = 0
            var bytes = 0
            var failures = 0
            func add() {
                let url = urls[next]
                next += 1
                group.addTask { (try? await session.data(from: url))?.0.count }
            }
            while next < min(concurrency, urls.count) { add() }
            while let result = await group.next() {
                if let result { bytes += result } else { failures += 1 }
                if next < urls.count { add() }
            }
            return (urls.count, failures, bytes)
        }
    }
}

/// `count` concurrent requests for one URL, queued while the downloader is suspended so that all are in before the
/// first transfer can finish: the origin's log must show one request.
func coalesce(_ url: URL, count: Int) async throws -> Measurement {
    try await withImageDownloader { downloader in
        await measure {
            downloader.isSuspended = true
            let tasks = (0..<count).map { _ in downloader.download(DownloadRequest(url: url), progress: nil) }
            downloader.isSuspended = false
            var bytes = 0
            var failures = 0
            for task in tasks {
                do { bytes += try await task.response.body.count } catch { failures += 1 }
            }
            return (count, failures, bytes)
        }
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 4, let number = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: download-benchmark osprey|urlsession|coalesce N FILE|URL\n".utf8))
    exit(2)
}
let result: Measurement
switch arguments[1] {
case "coalesce":
    result = try await coalesce(URL(string: arguments[3])!, count: number)
default:
    let urls = try String(contentsOfFile: arguments[3], encoding: .utf8)
        .split(separator: "\n").compactMap { URL(string: String($0)) }
    result =
        arguments[1] == "osprey"
        ? try await osprey(urls, concurrency: number) : await urlSession(urls, concurrency: number)
}
let encoder = JSONEncoder()
encoder.keyEncodingStrategy = .convertToSnakeCase
print(String(decoding: try encoder.encode(result), as: UTF8.self))
