import Synchronization

/// Remembers keys (a request's signature, a button's nonce) until they expire, so that a second
/// use of one is refused: the replay guard of the chat endpoints. Its memory is bounded: at
/// `capacity` live keys it takes no new one (`claim` answers `.full`, and the caller refuses the
/// request), so a replay can never slip through an eviction. Only verified requests reach it.
final class SeenOnce: Sendable {
    enum Claim: Equatable {
        /// First use: remembered until it expires.
        case fresh
        /// Seen before, and not expired: a replay.
        case seen
        /// Too many live keys to remember another.
        case full
    }

    let capacity: Int
    private let keys = Mutex<[String: Int64]>([:])

    init(capacity: Int) { self.capacity = capacity }

    /// Takes `key` for its first use, to be remembered until `expires` (seconds, the caller's clock).
    func claim(_ key: String, expires: Int64, now: Int64) -> Claim {
        keys.withLock { keys in
            if let until = keys[key], until >= now { return .seen }
            if keys.count >= capacity { keys = keys.filter { $0.value >= now } }
            guard keys.count < capacity else { return .full }
            keys[key] = expires
            return .fresh
        }
    }

    /// Gives a key back (the action it carried did nothing), so that it may be used again.
    func release(_ key: String) {
        _ = keys.withLock { $0.removeValue(forKey: key) }
    }

    /// How many keys are remembered (tests).
    var count: Int { keys.withLock { $0.count } }
}
