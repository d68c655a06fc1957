/// Readings dated more than a margin after now are refused wherever readings come in (`klaxon ingest`,
/// `POST /api/v1/readings`, sources). One reading dated 2199 would otherwise be a series' newest for
/// ever: every later real reading is older than it, evaluated as late and ignored, and an alert
/// "since 2199" could never change. The years 1800–2199 (`ReadingsParser`) bound what can be written
/// at all; this bounds what can be true now.
///
/// Replays (`klaxon dry-run` over history files) do not apply it: their readings are history, and
/// the replay's "now" is the readings' own time.
public struct FutureBound: Sendable, Hashable {
    /// Seconds a reading may be dated after now (clocks drift; a source may stamp the end of an interval).
    public var margin: Int64

    /// One day (`readings.max_future` in `klaxon.yaml`).
    public static let defaultMargin: Int64 = 86_400
    /// The largest margin accepted in the config: a year (a bigger one would no longer protect anything).
    public static let maximumMargin: Int64 = 366 * 86_400

    public static let standard = FutureBound(margin: defaultMargin)

    /// Seconds a reading may be dated after the evaluation's now and still decide the present state
    /// (clocks drift a little). A reading dated later is stored (within `margin`) but stepped only
    /// once the evaluation's time reaches it: one reading dated 23 hours ahead would otherwise be the
    /// series' newest, and every real reading until then late, so an alert could not resolve.
    public static let presentSkew: Int64 = 300

    /// How far ahead a forecast's readings may be dated: 400 days covers Open-Meteo's seasonal
    /// (9 months) and flood (up to 210 days) forecasts; a year 2199 stays refused.
    public static let forecastHorizon = FutureBound(margin: 400 * 86_400)

    public init(margin: Int64 = defaultMargin) {
        self.margin = max(0, min(margin, DurationText.maximum))
    }

    /// The latest reading time accepted at `now`.
    public func latest(now: Int64) -> Int64 {
        let (sum, overflow) = now.addingReportingOverflow(margin)
        return overflow ? Int64.max : sum
    }

    /// Why a reading dated `time` is refused at `now`, or nil when it is not too far ahead.
    public func problem(time: Int64, now: Int64) -> String? {
        guard time > latest(now: now) else { return nil }
        return "time \(Timestamp.format(time)) is more than \(DurationText.format(margin)) after now "
            + "(\(Timestamp.format(now))): a reading from the future is refused (readings.max_future)"
    }

    /// The readings not too far ahead, in order, and the others with their index in `readings` and why.
    /// Allocates nothing when every reading passes (the usual case).
    public func partition(_ readings: [Reading], now: Int64) -> (
        kept: [Reading], refused: [(index: Int, reading: Reading, reason: String)]
    ) {
        let latest = latest(now: now)
        guard let first = readings.firstIndex(where: { $0.time > latest }) else { return (readings, []) }
        var kept = Array(readings[..<first])
        var refused: [(index: Int, reading: Reading, reason: String)] = []
        for i in first..<readings.count {
            let r = readings[i]
            if r.time > latest {
                refused.append((i, r, problem(time: r.time, now: now) ?? ""))
            } else {
                kept.append(r)
            }
        }
        return (kept, refused)
    }
}

extension SourceBatch {
    static var forecastMargin: Int64 { FutureBound.forecastHorizon.margin }

    /// Drops the readings dated beyond `bound` at `now`; returns them, worded for people
    /// (`STATION METRIC: reason`), in batch order. Forecasts (`weather`, and readings of a batch
    /// marked `readingsAreForecast`) are about the future by nature: trip forecasts are kept, and
    /// forecast readings are bounded by `FutureBound.forecastHorizon` instead.
    public mutating func refuseFuture(_ bound: FutureBound, now: Int64) -> [String] {
        let bound = readingsAreForecast ? FutureBound(margin: max(bound.margin, Self.forecastMargin)) : bound
        let (kept, refused) = bound.partition(readings, now: now)
        guard !refused.isEmpty else { return [] }
        readings = kept
        return refused.map {
            "\(ReadingsParser.shown($0.reading.station)) \(ReadingsParser.shown($0.reading.metric)): \($0.reason)"
        }
    }
}
