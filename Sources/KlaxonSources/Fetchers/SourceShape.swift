import KlaxonCore
import Logging

/// How a source is run: a closed set the fetch loop and `klaxon fetch` switch over.
public enum SourceShape: Sendable {
    /// Asked every `every` seconds for what is new since its cursor (`fetch(cursor:now:http:)`).
    case polled
    /// A feed that pushes readings: the daemon listens for as long as it runs, `klaxon fetch` for a while.
    case streaming(any StreamingSource)
    /// Asked for the places of the stored trips (`fetch(places:now:http:)`), not for a cursor.
    case perPlace(any PlaceSource)
}

/// A source whose upstream pushes readings (`aqi-websocket`).
public protocol StreamingSource: Source {
    /// Seconds a one-off fetch (`klaxon fetch`) listens for.
    var listen: Double { get set }
    /// Seconds between kept samples of one series (after its first two); recorded frames read back
    /// by `klaxon ingest --format aqi-frames` are thinned alike.
    var sampleEvery: Int64 { get }
    /// The largest frame accepted, in bytes (recorded frames too).
    var maxFrame: Int { get }
    /// Listens until cancelled, handing kept readings to `deliver` as they arrive. `now` stamps them.
    func stream(
        now: @escaping @Sendable () -> Int64, logger: Logger,
        deliver: @escaping @Sendable ([Reading]) async throws -> Void) async
}

/// A lookup the app makes outside a fetch, at the address of a configured source of the kind that
/// answers it (else at the kind's default address).
public enum SourceLookup: Sendable, Hashable {
    /// NWPS gauge metadata (`klaxon gauge ID --fetch`): `nwps` sources.
    case gaugeMetadata
    /// USGS instantaneous values of a gauge's site (`klaxon gauge ID --fetch`): `usgs-iv` sources.
    case instantaneousValues
    /// Place names to coordinates (trip stops given by name): `open-meteo` sources.
    case geocoding
}

extension Source {
    public var shape: SourceShape { .polled }
    public var observationUnits: StationUnits? { nil }
    public func lookupURL(_ lookup: SourceLookup) -> String? { nil }
    public var seriesMetrics: [(id: String, metric: String)] { [] }

    /// The source as a stream; nil for a polled or per-place one.
    public var streaming: (any StreamingSource)? {
        if case .streaming(let s) = shape { return s }
        return nil
    }
}

extension StreamingSource {
    public var shape: SourceShape { .streaming(self) }
}

extension PlaceSource {
    public var shape: SourceShape { .perPlace(self) }
}
