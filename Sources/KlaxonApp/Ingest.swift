import Foundation
import KlaxonCore
import KlaxonSources
import KlaxonStore

/// `klaxon ingest`: streams readings files into the store in batches.
public enum Ingest {
    public static let batchSize = 50_000

    public struct Summary: Sendable {
        public var files = 0
        public var stats = IngestStats()
        public var rejected = 0
        /// Missing values in service responses (nothing stored for them).
        public var gaps = 0
        /// Station and gauge metadata records written.
        public var stations = 0
    }

    /// Ingests files; bad rows are reported as `FILE:LINE: reason` through `report` and skipped.
    public static func run(store: Store, files: [String], report: (String) -> Void = printError) throws -> Summary {
        let ingester = try ReadingIngester(store: store)
        var summary = Summary()
        var batch: [Reading] = []
        batch.reserveCapacity(batchSize)
        var writeError: (any Error)? = nil
        for path in files {
            summary.files += 1
            do {
                // Plain streaming: handing parsed rows across threads costs more than it saves here
                // (measured: 2.4 s alone, 3.0 s with a parsing thread, per million readings).
                try ReadingsFiles.stream(path: path) { row in
                    guard writeError == nil else { return }
                    switch row {
                    case .reading(let r, _):
                        batch.append(r)
                        if batch.count >= batchSize {
                            do { summary.stats += try ingester.write(batch) } catch { writeError = error }
                            batch.removeAll(keepingCapacity: true)
                        }
                    case .rejected(let line, let reason):
                        summary.rejected += 1
                        report("\(path):\(line): \(reason)")
                    }
                }
            } catch let error as UserError {
                summary.rejected += 1
                report(error.message)
            }
            if let writeError { throw writeError }
        }
        summary.stats += try ingester.write(batch)
        return summary
    }
}

/// `klaxon ingest --format …`: saved responses of the services, for back-testing rules on past
/// events (a year of a river's data, then `dry-run --db`).
public enum IngestFormat: String, CaseIterable, Sendable {
    /// Klaxon's own CSV / JSON Lines (by file extension).
    case readings
    /// NWIS WaterServices JSON, instantaneous or daily values.
    case usgsIVJSON = "usgs-iv-json"
    /// NWIS RDB (tab-separated), instantaneous or daily values.
    case usgsRDB = "usgs-rdb"
    /// USGS Water Data OGC API items (`continuous`, `daily`, `monitoring-locations`).
    case usgsOGCJSON = "usgs-ogc-json"
    /// CWMS Data API time series JSON (v2).
    case cwmsJSON = "cwms-json"
    /// NWPS gauge metadata (`/gauges/{id}`): flood categories and the USGS ↔ NWS mapping.
    case nwpsJSON = "nwps-json"
    /// USGS earthquake GeoJSON (summary feeds, FDSN queries, single events): stored as events.
    case usgsQuakes = "usgs-quakes"
    /// An Open-Meteo forecast response: daily weather for the point it names.
    case openMeteoJSON = "open-meteo-json"
    /// An OpenWeatherMap 5-day/3-hour or One Call response: daily weather for the point it names.
    case owmJSON = "owm-json"

    /// Parses a whole saved response. `owmUnits` is the `units=` the OpenWeatherMap response was
    /// asked with (the response does not say): standard (Kelvin), metric or imperial.
    public func parse(_ data: Data, now: Int64 = 0, owmUnits: String = "standard") throws -> SourceBatch {
        switch self {
        case .openMeteoJSON:
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
            guard let lat = object?["latitude"] as? Double, let lon = object?["longitude"] as? Double else {
                // Let the parser word the error (HTML page, truncated, error body).
                _ = try OpenMeteoParser.forecast(data, place: "0.00,0.00", issued: now)
                throw UserError("open-meteo-json: the response names no latitude/longitude")
            }
            var batch = SourceBatch()
            batch.weather = try OpenMeteoParser.forecast(
                data, place: PlacePoint(latitude: lat, longitude: lon).key, issued: now
            ).days
            return batch
        case .owmJSON:
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
            let coord = (object?["city"] as? [String: Any])?["coord"] as? [String: Any]
            let lat = (coord?["lat"] ?? object?["lat"]) as? Double
            let lon = (coord?["lon"] ?? object?["lon"]) as? Double
            var batch = SourceBatch()
            let key = PlacePoint(latitude: lat ?? 0, longitude: lon ?? 0).key
            if object?["daily"] != nil || (object?["list"] as? [[String: Any]])?.first?["temp"] is [String: Any] {
                let (days, alerts) = try OWMParser.daily(data, place: key, units: owmUnits, issued: now)
                batch.weather = days
                batch.weatherAlerts = alerts.map { PlaceAlert(place: key, alert: $0) }
            } else {
                batch.weather = try OWMParser.fiveDay(data, place: key, units: owmUnits, issued: now)
            }
            guard lat != nil, lon != nil else { throw UserError("owm-json: the response names no coordinates") }
            return batch
        case .readings: return SourceBatch()
        case .usgsIVJSON: return try USGSIVParser.parse(data)
        case .usgsRDB: return try RDBParser.parse(String(decoding: data, as: UTF8.self))
        case .usgsOGCJSON: return try OGCParser.parse(data).batch
        case .cwmsJSON: return try CWMSParser.parse(data).batch
        case .usgsQuakes:
            var batch = SourceBatch()
            batch.quakes = try QuakeParser.parse(data)
            return batch
        case .nwpsJSON:
            let g = try NWPSParser.gauge(data)
            return SourceBatch(
                stations: [
                    StationInfo(
                        id: g.stationID, source: "nwps", name: g.description ?? g.name, latitude: g.latitude,
                        longitude: g.longitude, timeZone: g.timeZone, usgsID: g.usgsID, nwsLID: g.lid)
                ], gauges: [g])
        }
    }
}

extension Ingest {
    /// Ingests saved service responses, one transaction per file: a file that does not parse is
    /// reported (`FILE: reason`) and nothing of it is stored.
    public static func run(
        store: Store, files: [String], format: IngestFormat, now: Int64, owmUnits: String = "standard",
        report: (String) -> Void = printError
    ) throws -> Summary {
        guard format != .readings else { return try run(store: store, files: files, report: report) }
        var summary = Summary()
        for path in files {
            summary.files += 1
            guard let data = FileManager.default.contents(atPath: path) else {
                summary.rejected += 1
                report("\(path): cannot read the file")
                continue
            }
            do {
                let batch = try format.parse(data, now: now, owmUnits: owmUnits)
                summary.stats += try store.write(batch, at: now)
                summary.gaps += batch.gaps
                summary.stations += batch.stations.count + batch.gauges.count
            } catch let e as ParseError {
                summary.rejected += 1
                report("\(path): \(e)")
            } catch let e as UserError {
                summary.rejected += 1
                report("\(path): \(e.message)")
            }
        }
        return summary
    }
}
