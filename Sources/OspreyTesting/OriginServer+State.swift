import Foundation
import NIOConcurrencyHelpers
import NIOCore

extension OriginServer {
    /// Everything the server's connections share, behind the server's one mutex.
    struct State {
        var testDataDirectory: String?
        var listener: (any Channel)?
        var port = 0
        var scheme = "http"
        var routes: [String: OriginResponse] = [:]
        var statistics: [String: PathStatistics] = [:]
        var connections: [ObjectIdentifier: any Channel] = [:]
        var connectionsOpened = 0
        /// Every request's path, in arrival order, across paths.
        var arrivals: [String] = []
        /// Requests being answered now, and the most ever at once, across paths.
        var inFlight = 0
        var maxInFlight = 0
        var waiters: [Waiter] = []
        var nextWaiterID = 0

        struct PathStatistics {
            var requests: [RecordedRequest] = []
            var inFlight = 0
            var maxInFlight = 0
            /// Answers cut short because the client went away.
            var aborted = 0
        }

        struct Waiter {
            let id: Int
            let path: String
            let count: Int
            let counting: Counting
            let continuation: CheckedContinuation<Void, Never>

            enum Counting {
                case requests
                case aborts
            }

            func isSatisfied(by statistics: PathStatistics?) -> Bool {
                switch counting {
                case .requests: (statistics?.requests.count ?? 0) >= count
                case .aborts: (statistics?.aborted ?? 0) >= count
                }
            }
        }

        /// Removes and returns the waiters for `path` that its statistics now satisfy.
        mutating func readyWaiters(for path: String) -> [Waiter] {
            let statistics = statistics[path]
            let ready = waiters.filter { $0.path == path && $0.isSatisfied(by: statistics) }
            waiters.removeAll { $0.path == path && $0.isSatisfied(by: statistics) }
            return ready
        }

        /// Records the arrival of `request` and returns the waiters it satisfies, to be resumed outside the lock.
        mutating func begin(_ request: RecordedRequest) -> [Waiter] {
            statistics[request.path, default: PathStatistics()].requests.append(request)
            arrivals.append(request.path)
            inFlight += 1
            maxInFlight = max(maxInFlight, inFlight)
            statistics[request.path]!.inFlight += 1
            statistics[request.path]!.maxInFlight = max(
                statistics[request.path]!.maxInFlight, statistics[request.path]!.inFlight)
            return readyWaiters(for: request.path)
        }

        /// Records that the answer to a request for `path` is complete or, when `aborted`, that its connection went
        /// away first; returns the waiters that satisfies.
        mutating func finish(_ path: String, aborted: Bool) -> [Waiter] {
            statistics[path]?.inFlight -= 1
            inFlight -= 1
            if aborted { statistics[path]?.aborted += 1 }
            return readyWaiters(for: path)
        }
    }

    /// Records `request` as arrived and in flight, and returns what to answer: its route, the corpus file it names
    /// under `/testdata/`, or `nil` for 404.
    func begin(_ request: RecordedRequest) -> Answer {
        let (waiters, route, testDataDirectory) = state.withLockedValue { state in
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

    /// Records that the answer to a request for `path` is over: complete, or `aborted` by the client going away.
    func finish(_ path: String, aborted: Bool = false) {
        let waiters = state.withLockedValue { $0.finish(path, aborted: aborted) }
        for waiter in waiters { waiter.continuation.resume() }
    }

    /// What the server answers to one request.
    enum Answer {
        case scripted(OriginResponse)
        case file(String)
        case notFound
    }
}
