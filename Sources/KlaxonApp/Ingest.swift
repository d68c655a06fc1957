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

    /// Ingests files; bad rows are reported as `FILE:LINE: reason` through `report` and skipped: the
    /// first `RejectionReport.limit` of each file, then one line counting the rest and, when the file
    /// looks like a service response, the `--format` that reads it.
    ///
    /// A second thread reads and parses while this one writes. It hands over whole batches and, in
    /// file order, the rejections and file errors between them, so what is written and reported, and
    /// in what order, is what parsing and writing in turn would give. (Handing over single rows cost
    /// more than it saved; whole batches take a million readings from 2.2 s to 1.9 s.)
    public static func run(store: any Store, files: [String], report: (String) -> Void = printError) async throws
        -> Summary
    {
        let ingester = try store.readingWriter()
        let queue = BatchQueue<Item>(depth: 3)
        // The parser blocks on the queue while it is full: it runs on a thread of its own, never on
        // the cooperative pool, and so does each wait for its next batch.
        async let parsing: Void = offPool { parse(files: files, into: queue) }
        do {
            let summary = try await consume(queue, ingester: ingester, report: report)
            try await parsing
            return summary
        } catch {
            queue.cancel()  // a write error or a thrown failure: the parser stops at its next row
            try? await parsing
            throw error
        }
    }

    static func consume(_ queue: BatchQueue<Item>, ingester: any ReadingWriter, report: (String) -> Void)
        async throws -> Summary
    {
        var summary = Summary()
        var writeError: (any Error)? = nil
        while let item = try await offPool({ queue.take() }) {
            switch item {
            case .file:
                summary.files += 1
            case .readings(let batch):
                // After a write error the rest of the file is skipped; the error ends the run after it.
                guard writeError == nil else { continue }
                do { summary.stats += try await ingester.write(batch) } catch { writeError = error }
            case .rejected(let message):
                guard writeError == nil else { continue }
                summary.rejected += 1
                report(message)
            case .fileError(let message):
                summary.rejected += 1
                report(message)
            case .moreRejected(let count, let messages):
                guard writeError == nil else { continue }
                summary.rejected += count
                for m in messages { report(m) }
            case .endOfFile:
                if let writeError { throw writeError }
            }
        }
        if let error = queue.error { throw error }
        if let writeError { throw writeError }  // the last batch, written after the last file
        return summary
    }

    /// What the parsing thread hands over, in file order.
    enum Item: Sendable {
        case file
        /// Readings to write (a full batch, or what is left after the last file).
        case readings([Reading])
        /// A rejected line, worded for the report.
        case rejected(String)
        /// Rejected lines past the per-file report limit, and the lines that close the file's report.
        case moreRejected(count: Int, messages: [String])
        /// The file could not be read.
        case fileError(String)
        case endOfFile
    }

    /// The parsing side of `run`.
    static func parse(files: [String], into queue: BatchQueue<Item>) {
        var batch: [Reading] = []
        batch.reserveCapacity(batchSize)
        for path in files {
            guard queue.put(.file) else { return }
            var rejections = RejectionReport(path: path)
            do {
                try ReadingsFiles.stream(path: path) { row in
                    guard !queue.isCancelled else { return }
                    switch row {
                    case .reading(let r, _):
                        batch.append(r)
                        if batch.count >= batchSize {
                            queue.put(.readings(batch))
                            batch.removeAll(keepingCapacity: true)
                        }
                    case .rejected(let line, let reason):
                        if let message = rejections.add(line: line, reason: reason) { queue.put(.rejected(message)) }
                    }
                }
            } catch let error as UserError {
                guard queue.put(.fileError(error.message)) else { return }
            } catch {
                queue.finish(error: error)
                return
            }
            // At most `RejectionReport.limit` lines were reported; the rest are counted here.
            let closing = rejections.closing { PayloadLook.of(path: path) }
            if !closing.isEmpty { queue.put(.moreRejected(count: rejections.unlisted, messages: closing)) }
            guard queue.put(.endOfFile) else { return }
        }
        queue.put(.readings(batch))
        queue.finish(error: nil)
    }
}

/// A JSON number as `JSONSerialization` gives it; nil for anything else, `true` and `false` included
/// (which would otherwise bridge to 1 and 0).
func jsonNumber(_ value: Any?) -> Double? {
    guard let number = value as? NSNumber, String(cString: number.objCType) != "c" else { return nil }
    return number.doubleValue
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
        let batch = try parsed(data, now: now, owmUnits: owmUnits)
        if let problem = batch.problem() { throw UserError("\(rawValue): \(problem)") }
        return batch
    }

    func parsed(_ data: Data, now: Int64, owmUnits: String) throws -> SourceBatch {
        switch self {
        case .openMeteoJSON:
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
            guard let lat = jsonNumber(object?["latitude"]), let lon = jsonNumber(object?["longitude"]),
                abs(lat) <= 90, abs(lon) <= 180
            else {
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
            let lat = jsonNumber(coord?["lat"] ?? object?["lat"])
            let lon = jsonNumber(coord?["lon"] ?? object?["lon"])
            var batch = SourceBatch()
            let key = PlacePoint(latitude: lat ?? 0, longitude: lon ?? 0).key
            if object?["daily"] != nil || (object?["list"] as? [[String: Any]])?.first?["temp"] is [String: Any] {
                let (days, alerts) = try OWMParser.daily(data, place: key, units: owmUnits, issued: now)
                batch.weather = days
                batch.weatherAlerts = alerts.map { PlaceAlert(place: key, alert: $0) }
            } else {
                batch.weather = try OWMParser.fiveDay(data, place: key, units: owmUnits, issued: now)
            }
            guard let lat, let lon, abs(lat) <= 90, abs(lon) <= 180 else {
                throw UserError("owm-json: the response names no coordinates (or impossible ones)")
            }
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
    /// reported (`FILE: reason`) and nothing of it is stored. A file that parses but yields nothing
    /// (no reading, missing value, station or event) is an error too, naming the format it looks like,
    /// unless it is an empty answer of the format given (a quake feed with no events). Quake events
    /// kept apart from a stored event they share an id with, and a CWMS page that is not the last, are
    /// reported as warnings.
    public static func run(
        store: any Store, files: [String], format: IngestFormat, now: Int64, owmUnits: String = "standard",
        report: (String) -> Void = printError
    ) async throws -> Summary {
        guard format != .readings else { return try await run(store: store, files: files, report: report) }
        var summary = Summary()
        for path in files {
            summary.files += 1
            guard let data = try await readFile(path) else {
                summary.rejected += 1
                report("\(path): cannot read the file")
                continue
            }
            do {
                let batch = try format.parse(data, now: now, owmUnits: owmUnits)
                if batch.isEmpty {
                    let look = PayloadLook.of(data)
                    guard look.fits(format) else {
                        summary.rejected += 1
                        report(
                            "\(path): nothing to store: read as \(format.rawValue) it yields no readings, stations or "
                                + "events; " + (look.hint(given: format) ?? "it looks like \(look.description)"))
                        continue
                    }
                    report("\(path): an empty answer, nothing to store (\(look.description))")
                }
                let stats = try await store.write(batch, at: now)
                summary.stats += stats
                summary.gaps += batch.gaps
                summary.stations += batch.stations.count + batch.gauges.count
                for line in warnings(path: path, format: format, data: data, batch: batch, stats: stats) {
                    report(line)
                }
            } catch let e as ParseError {
                summary.rejected += 1
                report("\(path): \(e)" + hint(data, format: format))
            } catch let e as UserError {
                summary.rejected += 1
                report("\(path): \(e.message)" + hint(data, format: format))
            }
        }
        return summary
    }

    /// `; it looks like …: try --format …` when a file that failed looks like another format.
    static func hint(_ data: Data, format: IngestFormat) -> String {
        PayloadLook.of(data).hint(given: format).map { "; " + $0 } ?? ""
    }

    /// Warnings about a file that was stored: quake events kept apart (the first
    /// `RejectionReport.limit`), and more pages of a paged CWMS answer.
    static func warnings(path: String, format: IngestFormat, data: Data, batch: SourceBatch, stats: IngestStats)
        -> [String]
    {
        var out: [String] = []
        let limit = RejectionReport.limit
        for conflict in stats.quakeConflicts.prefix(limit) { out.append("\(path): warning: \(conflict)") }
        if stats.quakeConflicts.count > limit {
            out.append("\(path): warning: \(stats.quakeConflicts.count - limit) more quake id conflicts not listed")
        }
        if format == .cwmsJSON, let page = CWMSParser.pageInfo(data), page.nextPage != nil {
            var line = "\(path): warning: one page of several: \(batch.readings.count + batch.gaps) values on this page"
            if let total = page.total { line += " of \(total) in all" }
            line += "; the rest are on the pages after it (ask again with page=<next-page>), not in this file"
            out.append(line)
        }
        return out
    }
}
