internal import NIOPosix
import Synchronization

// Extended data: a few bytes of the caller's own kept with an entry (the proxy keeps the quality a search chose
// beside an encoded variant), read and replaced without touching the entry's bytes (the index's side:
// `loadExtendedData(named:)` and `saveExtendedData(_:named:)` in DiskCache+Operations).
extension DiskCache {
    /// The extended data stored with `key`'s entry (see ``store(_:forKey:validators:expiration:extension:extendedData:)``);
    /// `nil` when it has none or there is no entry.
    public func extendedData(forKey key: String) async -> [UInt8]? {
        let name = Self.fileName(forKey: key)
        if let staged = state.withLock({ $0.staged[name] }) { return staged.extendedData }
        return (try? await threadPool.runIfActive { self.loadExtendedData(named: name) }) ?? nil
    }

    /// Replaces the extended data of `key`'s entry (`nil` or empty bytes remove it), leaving its bytes, times and
    /// recency as they are; returns whether there was an entry. A store under way takes it too.
    @discardableResult
    public func setExtendedData(_ data: [UInt8]?, forKey key: String) async -> Bool {
        let name = Self.fileName(forKey: key)
        let data = data?.isEmpty == true ? nil : data
        let wasStaged = state.withLock { state in
            state.staged[name]?.extendedData = data
            return state.staged[name] != nil
        }
        let written = (try? await threadPool.runIfActive { self.saveExtendedData(data, named: name) }) ?? false
        return written || wasStaged
    }
}
