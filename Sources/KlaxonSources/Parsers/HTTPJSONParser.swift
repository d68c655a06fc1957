import Foundation
import KlaxonCore

/// Where the readings are in a station's own JSON (`kind: http-json`): the list of records, each
/// record's time, and each metric's value, by JSON pointer.
public struct HTTPJSONLayout: Sendable {
    public struct Metric: Sendable {
        /// The metric to store (`wind_speed`).
        public var name: String
        public var pointer: JSONPointer
        /// The unit stored with it (`mph`), after `scale` and `offset`.
        public var unit: String?
        /// Stored value = value × scale + offset.
        public var scale: Double
        public var offset: Double

        public init(name: String, pointer: JSONPointer, unit: String? = nil, scale: Double = 1, offset: Double = 0) {
            self.name = name
            self.pointer = pointer
            self.unit = unit
            self.scale = scale
            self.offset = offset
        }
    }

    /// The array of records (`""`: the document itself); an object there is one record.
    public var records: JSONPointer
    /// Each record's time.
    public var time: JSONPointer
    public var timeFormat: StationTimeFormat
    /// The zone of times written without an offset (an IANA name).
    public var timeZone: String?
    /// The station the readings are stored under, with what is known of it.
    public var station: StationInfo
    public var metrics: [Metric]

    public init(
        records: JSONPointer, time: JSONPointer, timeFormat: StationTimeFormat = .iso8601, timeZone: String? = nil,
        station: StationInfo, metrics: [Metric]
    ) {
        self.records = records
        self.time = time
        self.timeFormat = timeFormat
        self.timeZone = timeZone
        self.station = station
        self.metrics = metrics
    }
}

/// Reads a station's JSON by its `HTTPJSONLayout`. Strict: a records pointer that names nothing, a
/// time that cannot be read, a value that is not a number, or a metric pointer that matches no
/// record at all (a typo) is an error naming the record and pointer. A `null` or empty value, or
/// one a record leaves out, is a gap.
public enum HTTPJSONParser {
    static let format = "http-json"
    public static let source = "http-json"
    /// The most records one body may hold.
    public static let maxRecords = 200_000
    /// A value beyond this (before scale and offset) is no measurement: an error.
    static let largest = 1e15

    public static func parse(_ data: Data, layout: HTTPJSONLayout) throws -> SourceBatch {
        let root = try JSONInput.decode(JSONValue.self, from: data, format: format)
        guard let target = layout.records.resolve(root) else {
            if let error = JSONInput.serverError(data, format: format) { throw error }
            throw ParseError(.missingField, format: format, "records pointer \"\(layout.records)\" names nothing")
        }
        let records: [JSONValue]
        switch target {
        case .array(let a): records = a
        case .object: records = [target]
        default:
            throw ParseError(
                .badValue, format: format, "records pointer \"\(layout.records)\" names neither a list nor an object")
        }
        guard records.count <= maxRecords else {
            throw ParseError(.badValue, format: format, "more than \(maxRecords) records in one body")
        }
        let zone = layout.timeZone.flatMap(TimeZone.init(identifier:))
        var batch = SourceBatch(stations: [layout.station])
        var matched = Array(repeating: false, count: layout.metrics.count)
        let station = layout.station.id
        for (index, record) in records.enumerated() {
            let at = "record \(index)"
            guard let timeValue = layout.time.resolve(record), timeValue != .null else {
                throw ParseError(.missingField, format: format, "\(at) has no time at \"\(layout.time)\"")
            }
            let time: Int64
            switch layout.timeFormat.time(timeValue, zone: zone) {
            case .success(let t): time = t
            case .failure(let why):
                throw ParseError(
                    .badValue, format: format,
                    "\(at): time \(shown(timeValue)) at \"\(layout.time)\" \(why)")
            }
            for (m, metric) in layout.metrics.enumerated() {
                guard let node = metric.pointer.resolve(record) else {
                    batch.gaps += 1
                    continue
                }
                matched[m] = true
                let raw: Double
                switch node {
                case .null:
                    batch.gaps += 1
                    continue
                case .number(let d):
                    raw = d
                case .string(let s):
                    if s.trimmingSpaces().isEmpty {
                        batch.gaps += 1
                        continue
                    }
                    guard let d = ParserSupport.number(s) else {
                        throw ParseError(
                            .badValue, format: format,
                            "\(at): \(metric.name) at \"\(metric.pointer)\" is \(shown(node)), not a number")
                    }
                    raw = d
                default:
                    throw ParseError(
                        .badValue, format: format,
                        "\(at): \(metric.name) at \"\(metric.pointer)\" is \(shown(node)), not a number")
                }
                let value = (raw * metric.scale + metric.offset)
                guard abs(raw) <= largest, value.isFinite else {
                    throw ParseError(
                        .badValue, format: format,
                        "\(at): \(metric.name) at \"\(metric.pointer)\" is \(formatValue(raw)), out of range")
                }
                let stored =
                    metric.scale == 1 && metric.offset == 0 ? value : (value * 1_000_000).rounded() / 1_000_000
                batch.readings.append(
                    Reading(
                        station: station, metric: metric.name, time: time, value: stored, unit: metric.unit,
                        source: source))
            }
        }
        if !records.isEmpty {
            for (m, metric) in layout.metrics.enumerated() where !matched[m] {
                throw ParseError(
                    .missingField, format: format,
                    "\(metric.name): pointer \"\(metric.pointer)\" matches nothing in any of the \(records.count) records"
                )
            }
        }
        return batch
    }

    /// A value as a message shows it: `"12abc"`, `an object`, `true`.
    static func shown(_ v: JSONValue) -> String {
        switch v {
        case .null: "null"
        case .bool(let b): "\(b)"
        case .number(let d): formatValue(d)
        case .string(let s): "\"\(ParseError.excerpt(s, limit: 40))\""
        case .array: "a list"
        case .object: "an object"
        }
    }
}
