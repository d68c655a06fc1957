import Crypto
import Foundation
import KlaxonCore
import Synchronization

/// The status site's charts as PNG, kept in memory for `ChartImages` and the `chart.png` routes.
///
/// Bounded in entries and in bytes (the least recently used picture goes first). A picture is keyed
/// by what it shows (page kind, station, series, range) and by the store's data version
/// (`ingestMark`, which grows with every stored reading, by any process): a repeated request is
/// served from memory, and a new reading makes the next request draw anew. Requests for one key
/// while its picture is being drawn wait for that one drawing.
final class ChartCache: Sendable {
    struct Key: Hashable, Sendable {
        var kind: SubjectPage
        var station: String
        /// The series charted (a station's metric); nil where the page decides (a gauge's stage).
        var metric: String?
        /// The range as the chart draws it: `48h@N` (N counts the range's time buckets, so a chart
        /// of the last 48 hours moves on by itself) or `FROM-TO` for a `since` range.
        var range: String
        /// The store's data version when the picture was asked for.
        var version: Int64
        /// The picture's scale.
        var scale: Int
    }

    /// A picture, its entity tag, and whether it drew any reading.
    struct Picture: Sendable {
        var png: [UInt8]
        var width: Int
        var height: Int
        /// `"…"`: a SHA-256 prefix of the bytes.
        var etag: String
        /// No reading in the range: the chart says so.
        var empty: Bool
    }

    let maxEntries: Int
    let maxBytes: Int
    /// What draws the pictures (the process's one rasterizer unless a test gives its own).
    let raster: SVGRaster

    private enum Slot {
        case ready(Picture, used: UInt64)
        case drawing(Task<Picture, any Error>)
    }

    private struct State {
        var slots: [Key: Slot] = [:]
        var bytes = 0
        var clock: UInt64 = 0
        var draws = 0
        var hits = 0
    }

    private let state = Mutex(State())

    /// 64 pictures and 8 MiB by default.
    init(maxEntries: Int = 64, maxBytes: Int = 8 << 20, raster: SVGRaster = .shared) {
        self.maxEntries = max(1, maxEntries)
        self.maxBytes = max(1, maxBytes)
        self.raster = raster
    }

    /// How many pictures were drawn (misses), and served from memory (hits), so far.
    var counts: (draws: Int, hits: Int) { state.withLock { ($0.draws, $0.hits) } }

    /// Pictures and their bytes held now.
    var size: (entries: Int, bytes: Int) {
        state.withLock { s in
            (s.slots.values.reduce(0) { if case .ready = $1 { $0 + 1 } else { $0 } }, s.bytes)
        }
    }

    /// The picture for `key`: from memory, from a drawing already under way, or drawn by `draw`
    /// (whose failure is not kept: the next request draws again).
    /// With `join: false` (delivery), a drawing under way for someone else is not waited for: the caller
    /// draws its own (and keeps it), so it never waits behind, or fails with, a visitor's render.
    func picture(
        _ key: Key, join: Bool = true, draw: @escaping @Sendable () async throws -> Picture
    ) async throws -> Picture {
        enum Found {
            case ready(Picture)
            case drawing(Task<Picture, any Error>)
            case own
        }
        let found: Found = state.withLock { s in
            s.clock += 1
            switch s.slots[key] {
            case .ready(let p, _)?:
                s.slots[key] = .ready(p, used: s.clock)
                s.hits += 1
                return .ready(p)
            case .drawing(let task)?:
                guard join else {
                    s.draws += 1
                    return .own
                }
                s.hits += 1
                return .drawing(task)
            case nil:
                s.draws += 1
                // The drawing outlives a caller that goes away: the others waiting for it need it.
                let task = Task<Picture, any Error> { [self] in
                    do {
                        let p = try await draw()
                        store(p, for: key)
                        return p
                    } catch {
                        state.withLock { s in s.slots[key] = nil }
                        throw error
                    }
                }
                s.slots[key] = .drawing(task)
                return .drawing(task)
            }
        }
        switch found {
        case .ready(let p): return p
        case .drawing(let task): return try await task.value
        case .own:
            let p = try await draw()
            store(p, for: key)
            return p
        }
    }

    private func store(_ p: Picture, for key: Key) {
        state.withLock { s in
            s.clock += 1
            // A picture larger than the whole budget is served, not kept.
            guard p.png.count <= maxBytes else {
                s.slots[key] = nil
                return
            }
            s.slots[key] = .ready(p, used: s.clock)
            s.bytes += p.png.count
            // Over a bound: the least recently used pictures go (a scan of at most `maxEntries`).
            while s.bytes > maxBytes || readyCount(s) > maxEntries {
                var oldest: (key: Key, used: UInt64, bytes: Int)? = nil
                for (k, slot) in s.slots {
                    if case .ready(let q, let used) = slot, k != key, used < (oldest?.used ?? .max) {
                        oldest = (k, used, q.png.count)
                    }
                }
                guard let oldest else { break }
                s.slots[oldest.key] = nil
                s.bytes -= oldest.bytes
            }
        }
    }

    private func readyCount(_ s: State) -> Int {
        s.slots.values.reduce(0) { if case .ready = $1 { $0 + 1 } else { $0 } }
    }

    /// An entity tag for PNG bytes: `"` + the first 16 bytes of their SHA-256 in hex + `"`.
    static func etag(_ bytes: [UInt8]) -> String {
        let digest = SHA256.hash(data: bytes)
        return "\"" + digest.prefix(16).map { String(format: "%02x", $0) }.joined() + "\""
    }
}
