import Osprey
import Prometheus

/// The proxy's Prometheus metrics, in one registry that `GET /metrics` writes out (docs/serve.md lists them). The
/// downloader reports into the same registry (`osprey_download_*`, with the origin fetch latency histogram).
final class ProxyMetrics: Sendable {
    /// Where a rendered image was found.
    enum Level: String, CaseIterable {
        /// The rendered result, from memory or disk.
        case resultMemory = "result_memory"
        case resultDisk = "result_disk"
        /// Rendered now from a source in memory, on disk, or fetched from the origin.
        case sourceMemory = "source_memory"
        case sourceDisk = "source_disk"
        case origin
    }

    let registry: PrometheusCollectorRegistry
    private let requests: [Int: Counter]
    private let otherRequests: Counter
    private let hits: [Level: Counter]
    let inFlight: Gauge
    let memoryBudget: Gauge
    let memoryReserved: Gauge
    let memoryWaiting: Gauge
    let bytesServed: Counter
    let fallbacks: Counter
    let processing: DurationHistogram
    let decodes: Gauge
    let sharedDecodes: Gauge
    let encodes: Gauge

    /// The statuses the proxy answers with, counted each under its own label.
    static let statuses = [200, 304, 400, 403, 404, 410, 413, 415, 422, 500, 502, 503, 504]

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        let requestsName = MetricNameDescriptor(
            namespace: "osprey", metricName: "http_requests", unitName: "total",
            helpText: "HTTP requests answered, by status.")
        var requests: [Int: Counter] = [:]
        for status in Self.statuses {
            requests[status] = registry.makeCounter(descriptor: requestsName, labels: [("status", "\(status)")])
        }
        self.requests = requests
        otherRequests = registry.makeCounter(descriptor: requestsName, labels: [("status", "other")])
        let hitsName = MetricNameDescriptor(
            namespace: "osprey", metricName: "cache_hits", unitName: "total",
            helpText: "Images served, by where the rendered result or its source was found.")
        var hits: [Level: Counter] = [:]
        for level in Level.allCases {
            hits[level] = registry.makeCounter(descriptor: hitsName, labels: [("level", level.rawValue)])
        }
        self.hits = hits
        inFlight = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "osprey", metricName: "requests_in_flight", unitName: "",
                helpText: "Image requests being handled now."))
        memoryBudget = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "osprey", metricName: "memory_budget", unitName: "bytes",
                helpText: "The memory decoding and processing may reserve at once (--max-memory)."))
        memoryReserved = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "osprey", metricName: "memory_reserved", unitName: "bytes",
                helpText: "Memory reserved by decodes and processing under way."))
        memoryWaiting = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "osprey", metricName: "memory_waiting", unitName: "",
                helpText: "Renders waiting for memory."))
        bytesServed = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "osprey", metricName: "served_bytes", unitName: "total",
                helpText: "Bytes of images sent in response bodies."))
        fallbacks = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "osprey", metricName: "fallbacks", unitName: "total",
                helpText: "Requests answered with the fallback image because their source could not be had."))
        decodes = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "osprey", metricName: "pipeline_decodes", unitName: "",
                helpText: "Source decodes since the start (one serves every variant of a source asked at once)."))
        sharedDecodes = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "osprey", metricName: "pipeline_shared_decodes", unitName: "",
                helpText: "Renders since the start that used a decode another render of the source ran."))
        encodes = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "osprey", metricName: "pipeline_encodes", unitName: "",
                helpText: "Results encoded since the start."))
        processing = registry.makeDurationHistogram(
            descriptor: MetricNameDescriptor(
                namespace: "osprey", metricName: "render_duration", unitName: "seconds",
                helpText: "Time to render an image that was not cached: fetch or cache read, decode, process, encode."),
            buckets: [
                .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
                .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
                .seconds(2.5), .seconds(5), .seconds(10),
            ])
    }

    func answered(status: Int) {
        (requests[status] ?? otherRequests).increment()
    }

    func hit(_ level: Level) {
        hits[level]?.increment()
    }

    /// Sets the memory gauges from a reading of the budget (done at each scrape: the reading is always current).
    func record(_ usage: MemoryBudget.Usage) {
        memoryBudget.set(Double(usage.capacity))
        memoryReserved.set(Double(usage.reserved))
        memoryWaiting.set(Double(usage.waiting))
    }

    /// Sets the pipeline gauges from the manager's statistics (at each scrape).
    func record(_ statistics: ImageManager.Statistics) {
        decodes.set(Double(statistics.decodes))
        sharedDecodes.set(Double(statistics.sharedDecodes))
        encodes.set(Double(statistics.encodes))
    }

    /// The exposition text of every metric in the registry.
    func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 << 10)
        registry.emit(into: &buffer)
        return buffer
    }
}
