import Foundation
import KlaxonCore

/// What storing a batch of quake events did.
public struct QuakeWriteStats: Sendable, Equatable {
    /// Events seen for the first time.
    public var new = 0
    /// Events with a newer `updated`: replaced, the old version kept as a revision.
    public var revised = 0
    /// Copies no newer than what is stored (a feed polled again): nothing written.
    public var unchanged = 0
    /// New events that share an associated id with a stored event although neither lists the
    /// other's own id: stored as events of their own (see `QuakeIdentity`).
    public var conflicts: [QuakeIDConflict] = []

    public init() {}
}

/// A stored quake event and when it was last changed.
public struct StoredQuake: Sendable, Equatable {
    /// The id the event was first stored under (aliases resolve to it).
    public var key: String
    public var event: QuakeEvent
    /// Evaluation order: bumped each time the event changes.
    public var seq: Int64

    public init(key: String, event: QuakeEvent, seq: Int64) {
        self.key = key
        self.event = event
        self.seq = seq
    }
}

extension QuakeEvent {
    /// A stored event version from its JSON; a row that no longer decodes still owns its key (it
    /// links to a version with that id).
    public static func stored(json: String, key: String) -> QuakeEvent {
        (try? JSONDecoder().decode(QuakeEvent.self, from: Data(json.utf8)))
            ?? QuakeEvent(id: key, time: 0, updated: 0, latitude: 0, longitude: 0)
    }
}
