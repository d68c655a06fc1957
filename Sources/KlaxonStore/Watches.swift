import Foundation
import KlaxonCore

// Watches (issue 43): what people asked to be told about, each evaluated as a rule (`Watch.rule`).
// Stored by every backend in a `watches` table: the owner's key, their own number for the watch,
// and the watch as JSON (its target and destination), so a new kind of target needs no migration.
// A person's quiet hours are a row of `watch_quiet_hours`; `watch_changes` holds one counter that
// every change of either bumps (`watchGeneration`).

/// People's watches.
public protocol WatchStore: Sendable {
    /// Adds `watch` (its `id` and `number` are assigned: the owner's next number) unless its owner
    /// holds `limit` watches already, or one with the same target and destination, in one
    /// transaction, so two requests at once cannot pass the limit together.
    func addWatch(_ watch: Watch, limit: Int) async throws -> WatchAddOutcome
    /// The owner's watches, by number.
    func watches(owner: String) async throws -> [Watch]
    /// Every watch, by id, after `after` (an id), at most `limit` (clamped to 1…100,000).
    func watches(after: Int64, limit: Int) async throws -> [Watch]
    /// Removes the owner's watch `number`; the watch removed, nil when they have none by that number.
    func removeWatch(owner: String, number: Int) async throws -> Watch?
    /// Removes the watch `id` (an operator's `klaxon watches remove`); nil when there is none.
    func removeWatch(id: Int64) async throws -> Watch?
    /// How many watches there are, by kind (`klaxon_watches{kind}`, the API).
    func watchCounts() async throws -> [WatchKind: Int]
    /// A number that changes whenever the watches or anyone's quiet hours change: every add, remove
    /// and quiet-hours change that took bumps it in its own transaction, on every daemon sharing the
    /// database. A daemon rebuilds its watch rules only when it moved (`Daemon.watchRules`).
    func watchGeneration() async throws -> Int64
    /// The owner's own quiet hours; nil when they keep none.
    func watchQuietHours(owner: String) async throws -> WatchQuietHours?
    /// Every owner's quiet hours, by owner key.
    func allWatchQuietHours() async throws -> [String: WatchQuietHours]
    /// Keeps `quiet` as the owner's quiet hours (nil: none), bumping `watchGeneration`; the quiet
    /// hours they kept before, nil when none.
    @discardableResult
    func setWatchQuietHours(owner: String, _ quiet: WatchQuietHours?, now: Int64) async throws -> WatchQuietHours?
}

/// What came of `addWatch`.
public enum WatchAddOutcome: Sendable, Equatable {
    case added(Watch)
    /// The owner holds `limit` watches already: nothing was added.
    case full(limit: Int)
    /// The owner has this watch already (the same target and destination): nothing was added.
    case duplicate(Watch)
}

extension WatchStore {
    /// Every watch, read in pages of `page`.
    public func allWatches(page: Int = 10_000) async throws -> [Watch] {
        var out: [Watch] = []
        var after: Int64 = 0
        while true {
            let rows = try await watches(after: after, limit: page)
            out += rows
            guard rows.count == page, let last = rows.last else { return out }
            after = last.id
        }
    }
}

/// A watch as a backend stores it: the target and destination as JSON.
public enum WatchJSON {
    struct Body: Codable {
        var owner: WatchOwner
        var target: WatchTarget
        var destination: WatchDestination
    }

    /// The JSON kept in the `body` column.
    public static func encode(_ w: Watch) -> String {
        let body = Body(owner: w.owner, target: w.target, destination: w.destination)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(body)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// Whether `a` and `b` watch the same thing and go to the same place (a duplicate).
    public static func same(_ a: Watch, _ b: Watch) -> Bool {
        a.target == b.target && a.destination == b.destination
    }

    /// The watch a row holds; nil for a body this version cannot read (a newer kind).
    public static func decode(id: Int64, number: Int, createdAt: Int64, body: String) -> Watch? {
        guard let b = try? JSONDecoder().decode(Body.self, from: Data(body.utf8)) else { return nil }
        return Watch(
            id: id, number: number, owner: b.owner, target: b.target, destination: b.destination, createdAt: createdAt)
    }
}
