import Foundation
import KlaxonCore

/// One page of the USACE CWMS Data API time series (`/cwms-data/timeseries`, v2 JSON).
///
/// `values` rows are `[epoch_ms_UTC, value, quality-code]` (the order `value-columns` gives); a
/// `null` value is missing. The station is the location, the text of the time-series name before
/// its first `.` (`ARBU.Elev.Inst.1Hour.0.Ccp-Rev` → `ARBU`); the metric comes from the parameter,
/// sub-parameter included (see `metricName(seriesID:)` and `MetricNames`).
public enum CWMSParser {
    static let format = "cwms-json"
    static let source = "cwms"
    /// CWMS allows 191 characters; a longer name is not a time-series id.
    static let maxSeriesIDBytes = 256

    /// The page's readings and its location, and the cursor of the next page (`next-page`), nil on
    /// the last. `metric` overrides the metric derived from the name (`metricName(seriesID:)`:
    /// `Elev` → `elevation`, `Flow-Res Out` → `discharge.res_out`); a caller loading several series
    /// of one location passes the name `MetricNames` gives, which keeps them apart.
    public static func parse(_ data: Data, metric: String? = nil) throws -> (batch: SourceBatch, nextPage: String?) {
        let page = try JSONInput.decode(Page.self, from: data, format: format)
        guard page.name.utf8.count <= maxSeriesIDBytes, let location = Self.location(seriesID: page.name),
            let derived = metricName(seriesID: page.name)
        else {
            throw ParseError(
                .badValue, format: format, "bad time-series name '\(ParseError.excerpt(page.name))'")
        }
        let metric = metric ?? derived
        let unit = ParserSupport.normalizeUnit(page.units)
        let columns = Columns(page.valueColumns ?? [])
        var batch = SourceBatch()
        var attributes: [String: String] = [:]
        if let office = page.officeID, !office.isEmpty { attributes["office"] = office }
        batch.stations = [StationInfo(id: location, source: source, attributes: attributes)]
        let width = columns.width(described: page.valueColumns?.count ?? 0)
        for (index, row) in page.values.enumerated() {
            let row = row.fields
            // A row short of a field cannot say which one it lacks: its numbers would land in the
            // wrong columns (a value read as the time), so it is an error, not a guess.
            guard row.count == width else {
                throw ParseError(
                    .badValue, format: format, "values[\(index)] has \(row.count) fields, not \(width)")
            }
            guard columns.time < row.count, let ms = row[columns.time], abs(ms) < 1e17 else {
                throw ParseError(.badValue, format: format, "bad date-time in values[\(index)]")
            }
            guard columns.value < row.count, let value = row[columns.value], value.isFinite else {
                batch.gaps += 1
                continue
            }
            let millis = Int64(ms.rounded(.down))
            let seconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
            var quality: String?
            if columns.quality < row.count, let q = row[columns.quality], abs(q) < 1e15 {
                quality = String(Int64(q))
            }
            batch.readings.append(
                Reading(
                    station: location, metric: metric, time: seconds, value: value, unit: unit, source: source,
                    quality: quality))
        }
        return (batch, page.nextPage.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// The time-series id a page is of (its `name`), read without its values.
    public static func seriesID(_ data: Data) throws -> String {
        try JSONInput.decode(Named.self, from: data, format: format).name
    }

    /// Positions (0-based) of the row fields, from `value-columns` ordinals, else 0, 1, 2.
    struct Columns {
        var time = 0
        var value = 1
        var quality = 2

        /// How many fields each row holds: as many as `value-columns` describes, else 3.
        func width(described: Int) -> Int { max(described, time + 1, value + 1, quality + 1) }

        init(_ described: [Page.Column]) {
            for column in described {
                guard let ordinal = column.ordinal, ordinal >= 1 else { continue }
                switch column.name {
                case "date-time": time = ordinal - 1
                case "value": value = ordinal - 1
                case "quality-code": quality = ordinal - 1
                default: break
                }
            }
        }
    }

    // MARK: - CDA v2 JSON, the parts Klaxon reads

    /// `[1515110400000, 265.547856, 0]`: numbers, the value possibly null.
    struct Row: Decodable {
        var fields: [Double?] = []

        init(from decoder: any Decoder) throws {
            var c = try decoder.unkeyedContainer()
            while !c.isAtEnd {
                fields.append(try c.decodeNil() ? nil : c.decode(Double.self))
            }
        }
    }

    struct Named: Decodable {
        var name: String
    }

    struct Page: Decodable {
        struct Column: Decodable {
            var name: String?
            var ordinal: Int?
        }
        var name: String
        var officeID: String?
        var units: String?
        var values: [Row]
        var valueColumns: [Column]?
        var nextPage: String?

        enum CodingKeys: String, CodingKey {
            case name, units, values
            case officeID = "office-id"
            case valueColumns = "value-columns"
            case nextPage = "next-page"
        }
    }
}
