/// The entries the disk cache's multi-process tests write: the worker processes (DiskCacheWorker) store them and the
/// tests check them, so both sides use this one definition.
public enum CacheWorkload {
    /// The key of entry `index` of worker `worker`.
    public static func key(worker: Int, index: Int) -> String {
        "w\(worker)-\(index)"
    }

    /// The bytes of entry `index` of worker `worker`: 1–4 KB, different for every key.
    public static func content(worker: Int, index: Int) -> [UInt8] {
        let count = 1024 + (index * 397 + worker * 131) % 3072
        return (0..<count).map { UInt8(truncatingIfNeeded: $0 &* (index + 7) &+ worker &* 13) }
    }
}
