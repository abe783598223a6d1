/// Entries in least-recently-used order with O(1) lookup, insertion, touch and removal: a dictionary into a doubly
/// linked list kept in one array (freed slots are reused, so there is no allocation per entry). The most recently
/// used entry is at the head, the next to evict at the tail.
///
/// Each entry carries a `stamp` given by the caller at every use; stamps only grow, so the tail holds the smallest
/// stamp of the list. ``MemoryCache`` compares its shards' tail stamps to evict least-recently-used across all of
/// them. Not thread-safe: each shard keeps one behind a lock.
@usableFromInline
struct LRUList<Key: Hashable, Value> {
    @usableFromInline
    struct Node {
        @usableFromInline var key: Key?
        @usableFromInline var value: Value?
        @usableFromInline var cost: Int
        /// When the entry stops being served and how reads move that, on the cache's clock; `nil` for never.
        @usableFromInline var expiry: ExpiryRule?
        @usableFromInline var stamp: UInt64
        @usableFromInline var previous: Int
        @usableFromInline var next: Int

        @inlinable
        init(key: Key?, value: Value?, cost: Int, expiry: ExpiryRule?, stamp: UInt64, previous: Int, next: Int) {
            (self.key, self.value, self.cost, self.expiry) = (key, value, cost, expiry)
            (self.stamp, self.previous, self.next) = (stamp, previous, next)
        }
    }

    /// What was taken out of the list, handed back so that values are released outside the caller's lock.
    @usableFromInline
    struct Removed {
        @usableFromInline var key: Key
        @usableFromInline var value: Value
        @usableFromInline var cost: Int

        @inlinable
        init(key: Key, value: Value, cost: Int) {
            (self.key, self.value, self.cost) = (key, value, cost)
        }
    }

    @usableFromInline var nodes: [Node] = []
    @usableFromInline var indices: [Key: Int] = [:]
    @usableFromInline var freeSlots: [Int] = []
    @usableFromInline var head = -1
    @usableFromInline var tail = -1

    /// The sum of the entries' costs.
    @usableFromInline var totalCost = 0

    /// How many lookups the owner made (it counts them; the list only keeps the number under the owner's lock).
    @usableFromInline var lookups = 0

    /// How many entries there are.
    @inlinable var count: Int { indices.count }

    /// The stamp of the least recently used entry, or `nil` when empty.
    @inlinable var tailStamp: UInt64? { tail >= 0 ? nodes[tail].stamp : nil }

    @inlinable init() {}

    // MARK: Reading

    @usableFromInline
    enum Lookup {
        case hit(Value)
        case miss
        /// The entry had expired: it is removed, and returned to be released outside the lock.
        case expired(Removed)
    }

    /// The value for `key`, which becomes the most recently used with `stamp` (its expiry moved as its rule says);
    /// an expired entry is removed instead. `now` is called only for an entry with an expiry.
    @inlinable mutating func value(forKey key: Key, stamp: UInt64, now: () -> Double) -> Lookup {
        guard let index = indices[key] else { return .miss }
        if let rule = nodes[index].expiry {
            let time = now()
            if rule.hasExpired(at: time) { return .expired(remove(at: index)) }
            nodes[index].expiry?.expiry = rule.expiry(afterReadAt: time)
        }
        nodes[index].stamp = stamp
        moveToHead(index)
        return .hit(nodes[index].value!)
    }

    /// Whether `key` has an entry, without touching its recency (expired entries count as absent).
    @inlinable func contains(_ key: Key, now: () -> Double) -> Bool {
        peek(key, now: now) != nil
    }

    /// The unexpired value for `key`, without touching its recency.
    @inlinable func peek(_ key: Key, now: () -> Double) -> Value? {
        guard let index = indices[key] else { return nil }
        if let rule = nodes[index].expiry, rule.hasExpired(at: now()) { return nil }
        return nodes[index].value
    }

    // MARK: Writing

    /// Stores `value` for `key` as the most recently used entry; returns the entry it replaced.
    @inlinable mutating func setValue(
        _ value: Value, forKey key: Key, cost: Int, expiry: ExpiryRule?, stamp: UInt64
    ) -> Removed? {
        let replaced = removeValue(forKey: key)
        let node = Node(key: key, value: value, cost: cost, expiry: expiry, stamp: stamp, previous: -1, next: -1)
        let index: Int
        if let slot = freeSlots.popLast() {
            index = slot
            nodes[index] = node
        } else {
            index = nodes.count
            nodes.append(node)
        }
        indices[key] = index
        totalCost += cost
        linkAtHead(index)
        return replaced
    }

    /// Removes the entry for `key` and returns it.
    @inlinable mutating func removeValue(forKey key: Key) -> Removed? {
        guard let index = indices[key] else { return nil }
        return remove(at: index)
    }

    /// Removes the least recently used entry and returns it.
    @inlinable mutating func removeLeastRecentlyUsed() -> Removed? {
        tail >= 0 ? remove(at: tail) : nil
    }

    /// Removes every entry whose expiry has passed.
    @inlinable mutating func removeExpired(now: Double) -> [Removed] {
        var removed: [Removed] = []
        var index = head
        while index >= 0 {
            let next = nodes[index].next
            if let rule = nodes[index].expiry, rule.hasExpired(at: now) {
                removed.append(remove(at: index))
            }
            index = next
        }
        return removed
    }

    /// Removes everything; returns the values, to be released outside the lock.
    @inlinable mutating func removeAll() -> [Value] {
        let values = nodes.compactMap(\.value)
        self = LRUList()
        return values
    }

    // MARK: The linked list

    @inlinable mutating func remove(at index: Int) -> Removed {
        unlink(index)
        let removed = Removed(key: nodes[index].key!, value: nodes[index].value!, cost: nodes[index].cost)
        indices[removed.key] = nil
        totalCost -= removed.cost
        nodes[index].key = nil
        nodes[index].value = nil
        freeSlots.append(index)
        return removed
    }

    @inlinable mutating func moveToHead(_ index: Int) {
        guard index != head else { return }
        unlink(index)
        linkAtHead(index)
    }

    @inlinable mutating func linkAtHead(_ index: Int) {
        nodes[index].previous = -1
        nodes[index].next = head
        if head >= 0 { nodes[head].previous = index }
        head = index
        if tail < 0 { tail = index }
    }

    @inlinable mutating func unlink(_ index: Int) {
        let (previous, next) = (nodes[index].previous, nodes[index].next)
        if previous >= 0 { nodes[previous].next = next } else { head = next }
        if next >= 0 { nodes[next].previous = previous } else { tail = previous }
        nodes[index].previous = -1
        nodes[index].next = -1
    }
}

extension LRUList: Sendable where Key: Sendable, Value: Sendable {}
extension LRUList.Node: Sendable where Key: Sendable, Value: Sendable {}
extension LRUList.Removed: Sendable where Key: Sendable, Value: Sendable {}
