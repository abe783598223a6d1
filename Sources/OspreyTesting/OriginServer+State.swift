import Foundation
import NIOCore
import Synchronization

extension OriginServer {
    /// Everything the server's connections share, behind the server's one mutex.
    struct State {
        var testDataDirectory: String?
        var listener: (any Channel)?
        var port = 0
        var routes: [String: OriginResponse] = [:]
        var statistics: [String: PathStatistics] = [:]
        var connections: [ObjectIdentifier: any Channel] = [:]
        var waiters: [Waiter] = []
        var nextWaiterID = 0

        struct PathStatistics {
            var requests: [RecordedRequest] = []
            var inFlight = 0
            var maxInFlight = 0
        }

        struct Waiter {
            let id: Int
            let path: String
            let count: Int
            let continuation: CheckedContinuation<Void, Never>
        }

        /// Records the arrival of `request` and returns the waiters it satisfies, to be resumed outside the lock.
        mutating func begin(_ request: RecordedRequest) -> [Waiter] {
            statistics[request.path, default: PathStatistics()].requests.append(request)
            statistics[request.path]!.inFlight += 1
            statistics[request.path]!.maxInFlight = max(
                statistics[request.path]!.maxInFlight, statistics[request.path]!.inFlight)
            let count = statistics[request.path]!.requests.count
            let ready = waiters.filter { $0.path == request.path && $0.count <= count }
            waiters.removeAll { $0.path == request.path && $0.count <= count }
            return ready
        }

        /// Records that the answer to a request for `path` is complete or its connection went away.
        mutating func finish(_ path: String) {
            statistics[path]?.inFlight -= 1
        }
    }

    /// Records `request` as arrived and in flight, and returns what to answer: its route, the corpus file it names
    /// under `/testdata/`, or `nil` for 404.
    func begin(_ request: RecordedRequest) -> Answer {
        let (waiters, route, testDataDirectory) = state.withLock { state in
            (state.begin(request), state.routes[request.path], state.testDataDirectory)
        }
        for waiter in waiters { waiter.continuation.resume() }
        if let route { return .scripted(route) }
        if let testDataDirectory, request.path.hasPrefix("/testdata/") {
            let relative = String(request.path.dropFirst("/testdata/".count))
            // Never serve outside the corpus.
            guard !relative.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }) else { return .notFound }
            return .file(testDataDirectory + "/" + (relative.removingPercentEncoding ?? relative))
        }
        return .notFound
    }

    /// Records that the answer to a request for `path` is over.
    func finish(_ path: String) {
        state.withLock { $0.finish(path) }
    }

    /// What the server answers to one request.
    enum Answer {
        case scripted(OriginResponse)
        case file(String)
        case notFound
    }
}
