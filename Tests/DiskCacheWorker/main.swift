// DiskCacheWorker BASE NAMESPACE WORKER COUNT SIZE_LIMIT INLINE_SIZE_LIMIT
//
// One of the processes in DiskCacheProcessTests: stores COUNT entries under keys "w<WORKER>-<i>" into the disk cache
// at BASE/osprey/NAMESPACE (keeping those of at most INLINE_SIZE_LIMIT bytes in its index), reads earlier ones back, and cleans every 25 stores. Any entry read back must be exactly
// what was stored (an evicted one may be missing). START_AT in the environment delays the start (see below). Prints "stored N verified N missing N" and exits 1 if a read
// returned wrong bytes or a store failed.
import Osprey
import OspreyTesting

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a line to standard error.
func complain(_ message: String) {
    var line = message + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

let arguments = CommandLine.arguments
guard arguments.count == 7, let worker = Int(arguments[3]), let count = Int(arguments[4]),
    let sizeLimit = Int(arguments[5]), let inlineSizeLimit = Int(arguments[6])
else {
    complain("usage: DiskCacheWorker BASE NAMESPACE WORKER COUNT SIZE_LIMIT INLINE_SIZE_LIMIT")
    exit(2)
}
// With START_AT (seconds since 1970) in the environment, wait until then: workers started one after another then open
// the cache at the same instant.
if let startAt = getenv("START_AT").flatMap({ Double(String(cString: $0)) }) {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let wait = startAt - (Double(now.tv_sec) + Double(now.tv_nsec) / 1e9)
    if wait > 0 { usleep(UInt32(wait * 1e6)) }
}
var configuration = DiskCache.Configuration(namespace: arguments[2])
configuration.baseDirectory = arguments[1]
configuration.sizeLimit = sizeLimit
configuration.inlineSizeLimit = inlineSizeLimit
configuration.cleaningInterval = nil
let cache = DiskCache(configuration: configuration)
var (verified, missing, wrong) = (0, 0, 0)
for index in 0..<count {
    do {
        try await cache.store(
            CacheWorkload.content(worker: worker, index: index), forKey: CacheWorkload.key(worker: worker, index: index)
        )
    } catch {
        complain("store \(CacheWorkload.key(worker: worker, index: index)) failed: \(error)")
        exit(1)
    }
    let earlier = (index * 7919) % (index + 1)
    if let bytes = await cache.data(forKey: CacheWorkload.key(worker: worker, index: earlier)) {
        if bytes == CacheWorkload.content(worker: worker, index: earlier) { verified += 1 } else { wrong += 1 }
    } else {
        missing += 1
    }
    if index % 25 == 24 { await cache.clean() }
}
print("stored \(count) verified \(verified) missing \(missing)")
exit(wrong == 0 ? 0 : 1)
