/// Which stored quake event a newly fetched version belongs to.
///
/// USGS lists under `ids` every id an event is known by, and a newer version may carry another
/// network's id as its preferred `id` (`us7000abcd` → `pr71234567`). An alias is evidence of
/// sameness only when it links the events' own ids: the newer version's `ids` holds the stored
/// event's `id`, or the stored event's `ids` holds the newer one's `id`. Two events that merely share
/// some third associated id are two events (real feeds have them: a M2.9 near Puerto Rico and a M4.1
/// in the Dominican Republic, 230 km apart, both listing one associated id).
public enum QuakeIdentity {
    /// How an incoming version is tied to a stored event, strongest first.
    public enum Link: Int, Comparable, Sendable {
        /// The same preferred id (or the id the stored event was first stored under).
        case sameID = 0
        /// The incoming version's `ids` hold the stored event's own id (a network switch, `us` → `pr`).
        case listsStoredID = 1
        /// The stored event's `ids` hold the incoming version's own id.
        case listedByStored = 2

        public static func < (a: Link, b: Link) -> Bool { a.rawValue < b.rawValue }
    }

    /// How `incoming` is tied to a stored event (its key and latest version), nil when only a third
    /// associated id, or nothing, links them.
    public static func link(_ incoming: QuakeEvent, to stored: QuakeEvent, key: String) -> Link? {
        if incoming.id == stored.id || incoming.id == key { return .sameID }
        if incoming.ids.contains(stored.id) || incoming.ids.contains(key) { return .listsStoredID }
        if stored.ids.contains(incoming.id) { return .listedByStored }
        return nil
    }

    /// What to do with an incoming version, given the stored events that share any id with it.
    public struct Match: Sendable, Equatable {
        /// The stored event it is a version of; nil: a new event.
        public var key: String?
        /// Stored events that share an associated id with it without a link between their own ids:
        /// kept apart, reported.
        public var conflicts: [QuakeIDConflict]

        public init(key: String?, conflicts: [QuakeIDConflict]) {
            self.key = key
            self.conflicts = conflicts
        }
    }

    /// Picks the stored event `incoming` is a version of among `candidates` (the stored events
    /// sharing an id with it, in the order their shared ids appear in `[id] + ids`): the strongest
    /// link wins, the first candidate on a tie. Candidates with no link are conflicts when nothing
    /// links `incoming` to a stored event; beside a real link they are not worth a word.
    public static func match(_ incoming: QuakeEvent, among candidates: [(key: String, event: QuakeEvent)]) -> Match {
        var best: (key: String, link: Link)? = nil
        var unlinked: [QuakeIDConflict] = []
        for c in candidates {
            if let l = link(incoming, to: c.event, key: c.key) {
                if best == nil || l < best!.link { best = (c.key, l) }
            } else {
                let theirs = Set(c.event.ids + [c.key])
                unlinked.append(
                    QuakeIDConflict(
                        id: incoming.id, storedKey: c.key, storedID: c.event.id,
                        shared: incoming.ids.filter { theirs.contains($0) }))
            }
        }
        if let best { return Match(key: best.key, conflicts: []) }
        return Match(key: nil, conflicts: unlinked)
    }
}

/// Two events that share an associated id although neither lists the other's own id: kept as two.
public struct QuakeIDConflict: Sendable, Equatable, CustomStringConvertible {
    /// The incoming event, stored as an event of its own.
    public var id: String
    /// The stored event it shares ids with: its key and its preferred id.
    public var storedKey: String
    public var storedID: String
    /// The ids both list.
    public var shared: [String]

    public init(id: String, storedKey: String, storedID: String, shared: [String]) {
        self.id = id
        self.storedKey = storedKey
        self.storedID = storedID
        self.shared = shared
    }

    public var description: String {
        let list = shared.map { "'\($0)'" }.joined(separator: ", ")
        return "quake \(id) and stored event \(storedID) both list \(list), but neither lists the other's own id: "
            + "kept as two events"
    }
}

/// Matches versions to events in memory, as the store does (`dry-run` over quake files).
public struct QuakeIndex: Sendable {
    /// Event keys by id and alias, the first claim winning.
    private var keys: [String: String] = [:]
    /// The newest version seen of each event.
    private var latest: [String: QuakeEvent] = [:]

    public init() {}

    /// The key of the event `e` is a version of (its own id for a new event), with any conflicts
    /// found; records `e` as that event's newest version when it is newer.
    public mutating func add(_ e: QuakeEvent) -> QuakeIdentity.Match {
        var candidates: [(key: String, event: QuakeEvent)] = []
        var seen: Set<String> = []
        for id in [e.id] + e.ids {
            guard let k = keys[id], seen.insert(k).inserted, let stored = latest[k] else { continue }
            candidates.append((k, stored))
        }
        var match = QuakeIdentity.match(e, among: candidates)
        let key = match.key ?? e.id
        match.key = key
        if let stored = latest[key], stored.updated >= e.updated {
            // An older or equal copy: the newest version stays.
        } else {
            latest[key] = e
        }
        for id in [e.id] + e.ids where keys[id] == nil { keys[id] = key }
        return match
    }
}
