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
        /// Items of forecast products not stored (a site without an issue time, a series in an
        /// unknown unit), each reported with its reason: skipped, not rejected.
        public var forecastSkips = 0
    }

    /// Ingests files; bad rows are reported as `FILE:LINE: reason` through `report` and skipped: the
    /// first `RejectionReport.limit` of each file, then one line counting the rest and, when the file
    /// looks like a service response, the `--format` that reads it.
    ///
    /// A second thread reads and parses while this one writes. It hands over whole batches and, in
    /// file order, the rejections and file errors between them, so what is written and reported, and
    /// in what order, is what parsing and writing in turn would give. (Handing over single rows cost
    /// more than it saved; whole batches take a million readings from 2.2 s to 1.9 s.)
    ///
    /// A row dated more than `future`'s margin after `now` (default: the wall clock) is rejected like
    /// any bad row: one such reading would be its series' newest for ever. A batch's readings in
    /// another unit than their series' are converted to it or rejected (`SeriesUnitRule`).
    public static func run(
        store: any ReadingIngest, files: [String], future: FutureBound = .standard, now: Int64? = nil,
        report: (String) -> Void = printError
    ) async throws -> Summary {
        let ingester = try store.readingWriter()
        let queue = BatchQueue<Item>(depth: 3)
        let limit = (bound: future, now: now ?? Int64(Date().timeIntervalSince1970))
        // The parser blocks on the queue while it is full: it runs on a thread of its own, never on
        // the cooperative pool, and each wait for its next batch runs on the blocking pool. Not the
        // parser too: on a pool of one thread (one core) it would hold the thread its consumer needs.
        async let parsing: Void = withCheckedContinuation { (parsed: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                parse(files: files, into: queue, future: limit)
                parsed.resume()
            }
        }
        do {
            let summary = try await consume(queue, ingester: ingester, report: report)
            await parsing
            return summary
        } catch {
            queue.cancel()  // a write error or a thrown failure: the parser stops at its next row
            await parsing
            throw error
        }
    }

    static func consume(_ queue: BatchQueue<Item>, ingester: any ReadingWriter, report: (String) -> Void)
        async throws -> Summary
    {
        var summary = Summary()
        var writeError: (any Error)? = nil
        var unitLines = 0
        while let item = try await offPool({ queue.take() }) {
            switch item {
            case .file:
                summary.files += 1
            case .readings(let batch):
                // After a write error the rest of the file is skipped; the error ends the run after it.
                guard writeError == nil else { continue }
                do {
                    let stats = try await ingester.write(batch)
                    summary.stats += stats
                    summary.rejected += stats.unitRefusedCount
                    // Listed up to a bound over the whole run, not per batch.
                    for line in unitNotes(stats) where unitLines < IngestStats.listedUnitNotes {
                        unitLines += 1
                        report("ingest: " + line)
                    }
                } catch { writeError = error }
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
    static func parse(
        files: [String], into queue: BatchQueue<Item>,
        future: (bound: FutureBound, now: Int64) = (.standard, Int64(Date().timeIntervalSince1970))
    ) {
        var batch: [Reading] = []
        batch.reserveCapacity(batchSize)
        let latest = future.bound.latest(now: future.now)
        for path in files {
            guard queue.put(.file) else { return }
            var rejections = RejectionReport(path: path)
            do {
                try ReadingsFiles.stream(path: path) { row in
                    guard !queue.isCancelled else { return }
                    switch row {
                    case .reading(let r, let line):
                        if r.time > latest {
                            let reason = future.bound.problem(time: r.time, now: future.now) ?? ""
                            if let message = rejections.add(line: line, reason: reason) {
                                queue.put(.rejected(message))
                            }
                            return
                        }
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

extension Ingest {
    /// What the store did about units (`SeriesUnitRule`): readings converted to their series' unit,
    /// readings refused for a unit that does not convert; the first `IngestStats.listedUnitNotes`.
    static func unitNotes(_ stats: IngestStats) -> [String] {
        var out = stats.unitConverted.map { "note: \($0)" } + stats.unitRefused.map { "\($0)" }
        let listed = stats.unitRefused.reduce(0) { $0 + $1.count }
        if stats.unitRefusedCount > listed {
            out.append("\(stats.unitRefusedCount - listed) more readings not stored for their unit, not listed")
        }
        return out
    }
}

/// A JSON number; nil for anything else, `true` and `false` included.
func jsonNumber(_ value: JSONValue?) -> Double? { value?.number }

/// `klaxon ingest --format …`: saved responses of the services, for back-testing rules on past
/// events (a year of a river's data, then `dry-run --db`). Each lands as the source of its kind
/// would store it: the same stations, metrics, units and times.
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
    /// NWPS gauge metadata (`/gauges/{id}`): flood categories and the USGS ↔ NWS mapping; or a
    /// stageflow body (`/gauges/{lid}/stageflow`, `…/stageflow/forecast`, `…/stageflow/observed`):
    /// observed readings and the forecast issuance, of the gauge the file is named after (`PRTO3`).
    case nwpsJSON = "nwps-json"
    /// The NWS HML product (hydrometeorological XML, many sites): observed readings and forecast
    /// issuances, as distributed (a WMO header, control characters and `\r\r\n` are read past).
    case hml = "hml"
    /// An AHPS `hydrograph.php?output=xml` document: one site's observed readings and forecast.
    case ahpsXML = "ahps-xml"
    /// USGS earthquake GeoJSON (summary feeds, FDSN queries, single events): stored as events.
    case usgsQuakes = "usgs-quakes"
    /// An Open-Meteo forecast response: daily weather for the point it names, and its other daily
    /// variables (the flood API's `river_discharge`) as readings of that point.
    case openMeteoJSON = "open-meteo-json"
    /// An OpenWeatherMap 5-day/3-hour or One Call response: daily weather for the point it names.
    case owmJSON = "owm-json"
    /// AirNow current observations (`/aq/observation/…/current`, legacy or 2026 format).
    case airnowJSON = "airnow-json"
    /// AirNow air-quality forecasts (`/aq/forecast/latLong/`, `/aq/forecast/zipCode/`, legacy or
    /// current field set): stored per reporting area, date and pollutant, the latest issuance winning.
    case airnowForecast = "airnow-forecast"
    /// OpenAQ v3 bodies: `/v3/locations…` (stations and their sensors), `/v3/locations/{id}/latest`
    /// and `/v3/sensors/{id}/measurements…` (readings).
    case openaqJSON = "openaq-json"
    /// A WAQI `/feed/…/` body.
    case waqiJSON = "waqi-json"
    /// NWS station observations (`api.weather.gov` `/stations/{id}/observations`, `…/latest`) and
    /// station documents (`/stations/{id}`), in the units of the config's `nws-observations` source
    /// or of `--units` (metric by default).
    case nwsObservations = "nws-observations"
    /// Frames of the city AQI WebSocket feed as received, one `{"received": …, "frame": […]}` per
    /// line (see `AQIFrameParser.recording`).
    case aqiFrames = "aqi-frames"

    /// Parses a whole saved response. `owmUnits` is the `units=` the OpenWeatherMap response was
    /// asked with (the response does not say): standard (Kelvin), metric or imperial. A file that
    /// needs others of its load (OpenAQ readings need their location's body) is read alone.
    public func parse(_ data: Data, now: Int64 = 0, owmUnits: String = "standard") throws -> SourceBatch {
        var context = IngestContext(config: nil)
        let parsed = try parse(data, now: now, owmUnits: owmUnits, context: &context)
        if let first = parsed.lineErrors.first { throw first }
        return parsed.batch
    }

    /// What one file gave.
    struct Parsed {
        var batch = SourceBatch()
        /// Lines to tell the user that are not errors (variables stored as readings or left out).
        var notes: [String] = []
        /// Bad lines of a line-oriented file (recorded frames): the other lines are stored.
        var lineErrors: [ParseError] = []
        /// Values read but not stored (a unit code the format does not know), worded for people,
        /// and how many values they stand for.
        var refused: [String] = []
        var refusedCount = 0
        /// Items of a forecast product not stored (reported in `notes`, each with its reason).
        var forecastSkips = 0
    }

    func parse(_ data: Data, now: Int64, owmUnits: String, context: inout IngestContext) throws -> Parsed {
        let parsed = try parseFormat(data, now: now, owmUnits: owmUnits, context: &context)
        if let problem = parsed.batch.problem() { throw UserError("\(rawValue): \(problem)") }
        return parsed
    }

    func parseFormat(_ data: Data, now: Int64, owmUnits: String, context: inout IngestContext) throws -> Parsed {
        switch self {
        case .openMeteoJSON:
            return try Self.openMeteo(data, now: now)
        case .owmJSON:
            let object = JSONValue.parse(data)?.object
            let coord = object?["city"]?["coord"]?.object
            let lat = jsonNumber(coord?["lat"] ?? object?["lat"])
            let lon = jsonNumber(coord?["lon"] ?? object?["lon"])
            var batch = SourceBatch()
            let key = PlacePoint(latitude: lat ?? 0, longitude: lon ?? 0).key
            let list = object?["list"]?.array
            if object?["daily"] != nil
                || (list?.allSatisfy { $0.object != nil } == true && list?.first?["temp"]?.object != nil)
            {
                let (days, alerts) = try OWMParser.daily(data, place: key, units: owmUnits, issued: now)
                batch.weather = days
                batch.weatherAlerts = alerts.map { PlaceAlert(place: key, alert: $0) }
            } else {
                batch.weather = try OWMParser.fiveDay(data, place: key, units: owmUnits, issued: now)
            }
            guard let lat, let lon, abs(lat) <= 90, abs(lon) <= 180 else {
                throw UserError("owm-json: the response names no coordinates (or impossible ones)")
            }
            return Parsed(batch: batch)
        case .readings: return Parsed()
        case .usgsIVJSON: return Parsed(batch: try USGSIVParser.parse(data))
        case .usgsRDB: return Parsed(batch: try RDBParser.parse(String(decoding: data, as: UTF8.self)))
        case .usgsOGCJSON: return Parsed(batch: try OGCParser.parse(data).batch)
        case .cwmsJSON:
            let metric = (try? CWMSParser.seriesID(data)).flatMap { context.cwmsMetrics[$0.lowercased()] }
            return Parsed(batch: try CWMSParser.parse(data, metric: metric).batch)
        case .usgsQuakes:
            var batch = SourceBatch()
            batch.quakes = try QuakeParser.parse(data)
            return Parsed(batch: batch)
        case .nwpsJSON:
            if let o = JSONValue.parse(data)?.object, o["lid"] == nil,
                o["observed"] != nil || o["forecast"] != nil || o["data"] != nil
            {
                guard let lid = context.fileGauge else {
                    throw UserError(
                        "nwps-json: a stageflow body does not name its gauge: name the file after the gauge's NWS LID "
                            + "(PRTO3_stageflow.json)")
                }
                return context.forecastParsed(
                    try FloodForecastParser.nwps(data, station: context.gaugeStations[lid] ?? lid, site: lid),
                    format: self)
            }
            let g = try NWPSParser.gauge(data)
            return Parsed(
                batch: SourceBatch(
                    stations: [
                        StationInfo(
                            id: g.stationID, source: "nwps", name: g.description ?? g.name, latitude: g.latitude,
                            longitude: g.longitude, timeZone: g.timeZone, usgsID: g.usgsID, nwsLID: g.lid)
                    ], gauges: [g]))
        case .nwsObservations:
            let (batch, unknown) = try NWSObservationsParser.parseReporting(data, units: context.stationUnits)
            var parsed = Parsed(batch: batch)
            if !unknown.isEmpty {
                parsed.refusedCount = unknown.values.reduce(0, +)
                parsed.refused = [
                    "\(parsed.refusedCount) values not stored, their unit unknown: "
                        + NWSObservationsParser.unknownUnitsSummary(unknown)
                ]
            }
            return parsed
        case .hml: return context.forecastParsed(try FloodForecastParser.hml(data), format: self)
        case .ahpsXML: return context.forecastParsed(try FloodForecastParser.ahps(data), format: self)
        case .airnowJSON: return Parsed(batch: try AirNowParser.parse(data))
        case .airnowForecast: return try Self.airNowForecast(data)
        case .waqiJSON: return Parsed(batch: try WAQIParser.parse(data))
        case .openaqJSON: return try Self.openAQ(data, context: context)
        case .aqiFrames: return Self.frames(data, context: &context)
        }
    }

    /// Forecast days for the point, and the other daily variables as readings of it.
    static func openMeteo(_ data: Data, now: Int64) throws -> Parsed {
        let object = JSONValue.parse(data)?.object
        guard let lat = jsonNumber(object?["latitude"]), let lon = jsonNumber(object?["longitude"]),
            abs(lat) <= 90, abs(lon) <= 180
        else {
            // Let the parser word the error (HTML page, truncated, error body).
            _ = try OpenMeteoParser.contents(data, place: "0.00,0.00", issued: now)
            throw UserError("open-meteo-json: the response names no latitude/longitude")
        }
        let place = PlacePoint(latitude: lat, longitude: lon).key
        let contents = try OpenMeteoParser.contents(data, place: place, issued: now)
        var parsed = Parsed()
        parsed.batch.weather = contents.days
        parsed.batch.readings = contents.readings
        parsed.batch.readingsAreForecast = true
        parsed.batch.gaps = contents.gaps
        if !contents.readings.isEmpty {
            parsed.batch.stations = [
                StationInfo(
                    id: place, source: "open-meteo", latitude: lat, longitude: lon, timeZone: contents.timeZone)
            ]
            var units: [String: String?] = [:]
            for r in contents.readings where units[r.metric] == nil { units[r.metric] = r.unit }
            let variables = units.keys.sorted().map { v in units[v].flatMap { $0 }.map { "\(v) (\($0))" } ?? v }
            var note = "open-meteo-json: stored as readings of station \(place): "
            note += variables.prefix(10).joined(separator: ", ")
            if variables.count > 10 { note += " and \(variables.count - 10) more" }
            parsed.notes.append(note)
        }
        if !contents.ignored.isEmpty {
            var note =
                "open-meteo-json: not stored: "
                + contents.ignored.prefix(10).map { "\($0.variable) (\($0.reason))" }.joined(separator: ", ")
            if contents.ignored.count > 10 { note += " and \(contents.ignored.count - 10) more" }
            parsed.notes.append(note)
        }
        return parsed
    }

    /// Stations from a locations body; readings from a measurements body, each under the location
    /// that lists its sensor (from the locations bodies of the same load) and named by that
    /// location's sensors. A result no loaded location owns is refused, with why; the others are kept.
    static func openAQ(_ data: Data, context: IngestContext) throws -> Parsed {
        let kind = try OpenAQParser.bodyKind(data)
        switch kind {
        case .locations:
            return Parsed(batch: SourceBatch(stations: try OpenAQParser.locations(data)))
        case .sensors:
            throw UserError(
                "openaq-json: a /v3/locations/{id}/sensors body does not say whose sensors they are: "
                    + "give the /v3/locations/{id} body instead")
        case .measurements, .legacyMeasurements:
            let owned =
                kind == .legacyMeasurements
                ? try OpenAQParser.legacyMeasurements(data)
                : try OpenAQParser.measurements(
                    data, sensorsByLocation: context.openAQSensors, sensor: context.openAQFileSensor)
            var parsed = Parsed(batch: owned.batch)
            parsed.refusedCount = owned.refusedCount
            let shown = Ingest.shownLineErrors
            parsed.refused = owned.refused.prefix(shown).map {
                "openaq-json: \($0.count) \($0.count == 1 ? "value" : "values") not stored: \($0.reason)"
            }
            if owned.refused.count > shown {
                let more = owned.refused.dropFirst(shown).reduce(0) { $0 + $1.count }
                parsed.refused.append("openaq-json: \(more) more values not stored for other reasons, not listed")
            }
            return parsed
        }
    }

    /// Forecasts of an AirNow forecast answer; records that cannot be forecasts refused with why, and
    /// records passed over for a later issuance in the same answer told as a note.
    static func airNowForecast(_ data: Data) throws -> Parsed {
        let r = try AirNowForecastParser.parse(data)
        var batch = SourceBatch()
        batch.airForecasts = r.forecasts
        var parsed = Parsed(batch: batch)
        parsed.refusedCount = r.skippedCount
        parsed.refused = r.skipped.map {
            "airnow-forecast: \($0.count) \($0.count == 1 ? "record" : "records") not stored: \($0.reason)"
        }
        if r.superseded > 0 {
            parsed.notes.append(
                "airnow-forecast: the answer holds two issue dates: \(r.superseded) "
                    + "\(r.superseded == 1 ? "record" : "records") of the earlier issuance passed over for the later")
        }
        if r.duplicates > 0 {
            parsed.notes.append(
                "airnow-forecast: \(r.duplicates) \(r.duplicates == 1 ? "record repeats" : "records repeat") an area, "
                    + "date and pollutant of the same issuance: the worse forecast kept")
        }
        return parsed
    }

    /// The recorded frames, thinned per city as the `aqi-websocket` source thins what it receives.
    static func frames(_ data: Data, context: inout IngestContext) -> Parsed {
        var parsed = Parsed()
        var thinned = 0
        for line in AQIFrameParser.recording(data, maxFrame: context.aqiMaxFrame) {
            switch line {
            case .failure(let error):
                parsed.lineErrors.append(error)
            case .success(let frame):
                parsed.batch.gaps += frame.skipped
                for var r in frame.readings {
                    guard context.aqiSampler.keep(r.station, at: r.time) else {
                        thinned += 1
                        continue
                    }
                    if let name = context.aqiSourceName { r.source = name }
                    parsed.batch.readings.append(r)
                }
            }
        }
        if thinned > 0 {
            parsed.notes.append(
                "aqi-frames: \(thinned) samples thinned out (sample_every \(context.aqiSampler.every) s, "
                    + "as the source keeps them)")
        }
        return parsed
    }
}

/// What parsing one file of an ingest needs from the configuration and from the other files.
struct IngestContext {
    /// Lowercased CWMS time-series id → metric: the configured sources' names, then the names the
    /// files' other series get together.
    var cwmsMetrics: [String: String] = [:]
    /// OpenAQ location id → sensor id → parameter and unit, from the locations bodies loaded.
    var openAQSensors: [Int: [Int: (parameter: String, unit: String)]] = [:]
    /// The OpenAQ sensor the file being read was asked for, from its name
    /// (`OpenAQParser.sensorID(fileName:)`): whose values a `/v3/sensors/{id}/measurements` body holds.
    var openAQFileSensor: Int?
    /// The configured `aqi-websocket` source's name, its thinning and its largest frame.
    var aqiSourceName: String?
    var aqiSampler: Sampler
    var aqiMaxFrame: Int
    /// The NWS LID a saved NWPS stageflow body was asked for, from its file's name
    /// (`FloodForecastParser.gaugeID(fileName:)`).
    var fileGauge: String?
    /// NWS LID → the station id its gauge's readings are stored under (a USGS site), from the
    /// gauges stored: forecasts and observations of a product naming LIDs land on the same series.
    var gaugeStations: [String: String] = [:]
    /// The units of NWS observations: `--units`, else those of the config's `nws-observations`
    /// sources (when they agree), else metric.
    var stationUnits: StationUnits

    /// With the one `aqi-websocket` source of the config, if it has exactly one, else its defaults.
    init(config: Config?, stationUnits: StationUnits? = nil) {
        let configured = Set(config?.sources.compactMap(\.source.observationUnits) ?? [])
        self.stationUnits = stationUnits ?? (configured.count == 1 ? configured.first! : .metric)
        // Recorded frames are the stream's (`aqi-websocket`, the one streaming kind).
        let sockets = config?.sources.compactMap(\.source.streaming) ?? []
        let socket = sockets.count == 1 ? sockets[0] : nil
        aqiSourceName = socket?.name
        aqiSampler = Sampler(every: socket?.sampleEvery ?? AQIWebSocketSource(name: "", url: "").sampleEvery)
        aqiMaxFrame = socket?.maxFrame ?? AQIWebSocketSource(name: "", url: "").maxFrame
    }

    /// Reads what the files of a load need from each other: the CWMS series loaded together, the
    /// OpenAQ locations' sensors. A file that cannot be read is left to the load to report.
    mutating func prepare(format: IngestFormat, files: [String], config: Config?, store: any ReadingIngest)
        async throws
    {
        switch format {
        case .cwmsJSON:
            // Each configured source's series keep the names that source gives them.
            for source in config?.sources ?? [] {
                for (id, metric) in source.source.seriesMetrics { cwmsMetrics[id.lowercased()] = metric }
            }
            var others: [String] = []
            var seen: Set<String> = []
            for path in files {
                guard let data = try await readFile(path), let id = try? CWMSParser.seriesID(data) else { continue }
                let key = id.lowercased()
                guard cwmsMetrics[key] == nil, seen.insert(key).inserted else { continue }
                others.append(id)
            }
            guard !others.isEmpty else { return }
            let names = CWMSParser.MetricNames(
                cwmsMetrics.map { (id: $0.key, metric: Optional($0.value)) } + others.map { ($0, nil) })
            for id in others {
                if let name = names[id] { cwmsMetrics[id.lowercased()] = name }
            }
        case .nwpsJSON, .hml, .ahpsXML:
            if let stations = store as? any StationReads {
                for g in try await stations.gauges() where g.usgsID != nil { gaugeStations[g.lid] = g.stationID }
            }
        case .openaqJSON:
            for path in files {
                guard let data = try await readFile(path), (try? OpenAQParser.bodyKind(data)) == .locations,
                    let sensors = try? OpenAQParser.sensorsByLocation(data)
                else { continue }
                openAQSensors.merge(sensors) { _, new in new }
            }
        default:
            break
        }
    }
}

extension Ingest {
    /// Bad lines of one file shown before the rest are only counted.
    static let shownLineErrors = 10

    /// Ingests saved service responses, one transaction per file: a file that does not parse is
    /// reported (`FILE: reason`) and nothing of it is stored. A file that parses but yields nothing
    /// (no reading, missing value, station or event) is an error too, naming the format it looks like,
    /// unless it is an empty answer of the format given (a quake feed with no events). Quake events
    /// kept apart from a stored event they share an id with, and a CWMS page that is not the last, are
    /// reported as warnings. Recorded frames are read line by line: a bad line is reported (`FILE:LINE: reason`) and the others are stored. `config`, when
    /// given, supplies what its sources would use: the `metric:` of CWMS time series, the name and
    /// `sample_every` of its `aqi-websocket` source.
    /// Without a format (`klaxon ingest FILE` without `--format`): each file read as the format it looks
    /// like (`PayloadLook`: a saved USGS, NWPS, CWMS, Open-Meteo, OpenWeatherMap, NWS, AirNow, OpenAQ or
    /// WAQI response), the readings parser for the rest; the files of one format are read together, in
    /// the order given, readings files first. The summaries add up.
    public static func run(
        store: any ReadingIngest, files: [String], format: IngestFormat?, now: Int64, owmUnits: String = "standard",
        config: Config? = nil, stationUnits: StationUnits? = nil, report: (String) -> Void = printError
    ) async throws -> Summary {
        if let format {
            return try await run(
                store: store, files: files, format: format, now: now, owmUnits: owmUnits, config: config,
                stationUnits: stationUnits, report: report)
        }
        var groups: [(format: IngestFormat, files: [String])] = []
        for path in files {
            let look = PayloadLook.of(path: path)?.format ?? .readings
            if let i = groups.firstIndex(where: { $0.format == look }) {
                groups[i].files.append(path)
            } else {
                groups.append((look, [path]))
            }
        }
        groups.sort { ($0.format == .readings ? 0 : 1) < ($1.format == .readings ? 0 : 1) }
        var total = Summary()
        for group in groups {
            let s = try await run(
                store: store, files: group.files, format: group.format, now: now, owmUnits: owmUnits, config: config,
                stationUnits: stationUnits, report: report)
            total.files += s.files
            total.stats += s.stats
            total.rejected += s.rejected
            total.gaps += s.gaps
            total.stations += s.stations
            total.forecastSkips += s.forecastSkips
        }
        return total
    }

    public static func run(
        store: any ReadingIngest, files: [String], format: IngestFormat, now: Int64, owmUnits: String = "standard",
        config: Config? = nil, stationUnits: StationUnits? = nil, report: (String) -> Void = printError
    ) async throws -> Summary {
        let future = config?.futureBound ?? .standard
        guard format != .readings else {
            return try await run(store: store, files: files, future: future, now: now, report: report)
        }
        var context = IngestContext(config: config, stationUnits: stationUnits)
        try await context.prepare(format: format, files: files, config: config, store: store)
        var summary = Summary()
        for path in files {
            summary.files += 1
            guard let data = try await readFile(path) else {
                summary.rejected += 1
                report("\(path): cannot read the file")
                continue
            }
            context.openAQFileSensor = format == .openaqJSON ? OpenAQParser.sensorID(fileName: path) : nil
            context.fileGauge = format == .nwpsJSON ? FloodForecastParser.gaugeID(fileName: path) : nil
            do {
                let parsed = try format.parse(data, now: now, owmUnits: owmUnits, context: &context)
                for error in parsed.lineErrors.prefix(shownLineErrors) {
                    report("\(path):\(error.line ?? 0): \(error.message)")
                }
                if parsed.lineErrors.count > shownLineErrors {
                    report("\(path): \(parsed.lineErrors.count - shownLineErrors) more bad lines not shown")
                }
                summary.rejected += parsed.lineErrors.count
                for note in parsed.notes { report("\(path): \(note)") }
                for line in parsed.refused { report("\(path): \(line)") }
                summary.rejected += parsed.refusedCount
                summary.forecastSkips += parsed.forecastSkips
                var batch = parsed.batch
                // Readings dated too far ahead are refused, the rest of the file stored.
                let ahead = batch.refuseFuture(future, now: now)
                for line in ahead.prefix(shownLineErrors) { report("\(path): \(line)") }
                if ahead.count > shownLineErrors {
                    report("\(path): \(ahead.count - shownLineErrors) more readings from the future not shown")
                }
                summary.rejected += ahead.count
                if batch.isEmpty, parsed.lineErrors.isEmpty, ahead.isEmpty, parsed.refusedCount == 0 {
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
                summary.rejected += stats.unitRefusedCount
                for line in unitNotes(stats) { report("\(path): \(line)") }
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

extension IngestContext {
    /// A forecast product's batch: its LIDs mapped to the stations their gauges' readings are stored
    /// under, and each skipped item a note with its reason (the first `Ingest.shownLineErrors`).
    func forecastParsed(_ batch: SourceBatch, format: IngestFormat) -> IngestFormat.Parsed {
        var batch = batch
        for i in batch.readings.indices {
            if let s = gaugeStations[batch.readings[i].station] { batch.readings[i].station = s }
        }
        for i in batch.forecasts.indices {
            if let s = gaugeStations[batch.forecasts[i].station] { batch.forecasts[i].station = s }
        }
        var parsed = IngestFormat.Parsed(batch: batch)
        let shown = Ingest.shownLineErrors
        parsed.notes = batch.forecastSkips.prefix(shown).map { "\(format.rawValue): skipped \($0.site): \($0.reason)" }
        if batch.forecastSkips.count > shown {
            parsed.notes.append(
                "\(format.rawValue): \(batch.forecastSkips.count - shown) more items skipped, not listed")
        }
        parsed.forecastSkips = batch.forecastSkips.count
        return parsed
    }
}
