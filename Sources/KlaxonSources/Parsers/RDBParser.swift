import KlaxonCore

/// USGS NWIS RDB, the tab-separated format of `format=rdb`: instantaneous values (local `datetime`
/// plus `tz_cd`), daily values (a calendar day, stored at 00:00Z), and the site service's metadata.
///
/// The layout is `#` comment lines, a column-name row, a column-format row (`5s 15s 20d …`), then
/// data rows; a file covering several sites repeats the comment block and both rows for each site.
/// Value columns are named `<TS_ID>_<pcode>` (instantaneous) or `<TS_ID>_<pcode>_<stat>` (daily),
/// each followed by its `…_cd` qualifier column. An empty field is a missing value.
///
/// Daily values saved before 2005 have another layout: `agency_cd site_no dv_dt dv_va dv_cd`, one
/// value column whose parameter only the comment header names, in words ("daily mean streamflow
/// value, in cubic-feet per-second") or by code. Both are read.
public enum RDBParser {
    static let format = "usgs-rdb"
    static let source = "usgs-rdb"

    /// Readings and stations of one RDB document. A site-service document (`station_nm`,
    /// `dec_lat_va`, … and no `datetime`) yields stations only.
    public static func parse(_ text: String) throws -> SourceBatch {
        try checkLooksLikeRDB(text)
        var state = State()
        var lineNumber = 0
        // "\r\n" is one Character in Swift: split on it too (the site service sends CRLF).
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            lineNumber += 1
            if line.first == "#" {
                state.comment(line)
                continue
            }
            if line.allSatisfy({ $0 == " " || $0 == "\t" }) { continue }
            try state.row(line, number: lineNumber)
        }
        if state.expectFormatRow {
            throw ParseError(.malformed, format: format, line: lineNumber, "missing the column-format row")
        }
        return state.finish()
    }

    static func checkLooksLikeRDB(_ text: String) throws {
        guard let first = text.first(where: { !$0.isWhitespace && $0 != "\u{FEFF}" }) else { return }
        if first == "<" {
            throw JSONInput.markupError(head: String(text.prefix(8192)), format: format, expected: "RDB")
        }
        if first == "{" || first == "[" {
            throw ParseError(.notTheFormat, format: format, "got JSON, not RDB ('\(ParseError.excerpt(text))')")
        }
    }

    /// Where the fields of one table are.
    struct Layout {
        struct ValueColumn {
            var index: Int
            var qualifierIndex: Int?
            /// The TS_ID (or the older DD number) that tells method series of one parameter apart.
            var series: String
            var code: String
            var statistic: String?
        }

        var site: Int
        var agency: Int?
        var datetime: Int?
        /// How many fields the header names.
        var width = 0
        /// The pre-2005 daily layout, whose rows may stop before an empty last field (`dv_cd`).
        var legacy = false
        var timeZone: Int?
        var values: [ValueColumn] = []
        /// Site-service columns.
        var name: Int?
        var latitude: Int?
        var longitude: Int?
        var siteType: Int?
        var huc: Int?

        /// `header`: the comment lines above the column names (the pre-2005 layout names its
        /// parameter there).
        init(columns: [Substring], line: Int, header: [Substring] = []) throws {
            func index(_ name: String) -> Int? { columns.firstIndex { $0 == name } }
            guard let site = index("site_no") else {
                throw ParseError(.missingField, format: format, line: line, "missing column 'site_no'")
            }
            self.site = site
            width = columns.count
            agency = index("agency_cd")
            datetime = index("datetime") ?? index("dv_dt")
            legacy = index("datetime") == nil && index("dv_dt") != nil
            timeZone = index("tz_cd")
            name = index("station_nm")
            latitude = index("dec_lat_va")
            longitude = index("dec_long_va")
            siteType = index("site_tp_cd")
            huc = index("huc_cd")
            if datetime == nil && name == nil {
                throw ParseError(.missingField, format: format, line: line, "missing column 'datetime'")
            }
            for (i, column) in columns.enumerated() {
                let parts = column.split(separator: "_", omittingEmptySubsequences: false)
                guard parts.count == 2 || parts.count == 3,
                    parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) }),
                    USGSParameters.isCode(parts[1])
                else { continue }
                values.append(
                    ValueColumn(
                        index: i, qualifierIndex: index(column + "_cd"), series: String(parts[0]),
                        code: String(parts[1]),
                        statistic: parts.count == 3 ? String(parts[2]) : nil))
            }
            if index("datetime") == nil, let dv = index("dv_va") {
                guard let parameter = RDBParser.legacyParameter(header) else {
                    throw ParseError(
                        .missingField, format: format, line: line,
                        "a daily-values file in the pre-2005 layout (dv_dt, dv_va) whose header names no parameter "
                            + "(such as 'daily mean streamflow' or 'parameter 00060')")
                }
                values.append(
                    ValueColumn(
                        index: dv, qualifierIndex: index("dv_cd"), series: "dv", code: parameter.code,
                        statistic: parameter.statistic))
            }
        }
    }

    /// The parameter and statistic of the pre-2005 layout's `dv_va`, from the comment header: the
    /// line describing `dv_va` first, then the rest. A code (`parameter 00060`) wins over words.
    static func legacyParameter(_ header: [Substring]) -> (code: String, statistic: String)? {
        let described = header.filter { $0.contains("dv_va") }
        for lines in [described, header] {
            let text = lines.joined(separator: " ").lowercased()
            guard !text.isEmpty else { continue }
            let words = text.split(whereSeparator: { !$0.isLetter && !$0.isNumber })
            var code: String?
            for (i, w) in words.enumerated() where USGSParameters.isCode(w) {
                // `parameter 00060`, `parameter code 00060`, `parameter_cd 00060`, not `statistic code 00003`.
                let before = words[max(0, i - 2)..<i]
                if before.last?.hasPrefix("parameter") == true
                    || ((before.last == "code" || before.last == "cd") && before.first?.hasPrefix("parameter") == true)
                {
                    code = String(w)
                    break
                }
            }
            if code == nil {
                let names: [(words: [String], code: String)] = [
                    (["streamflow"], "00060"), (["discharge"], "00060"), (["gage height"], "00065"),
                    (["gage-height"], "00065"), (["stage"], "00065"), (["precipitation"], "00045"),
                    (["water temperature"], "00010"), (["temperature, water"], "00010"),
                    (["specific conductance"], "00095"),
                ]
                code = names.first { $0.words.allSatisfy(text.contains) }?.code
            }
            guard let code else { continue }
            let statistic: String
            if text.contains("mean") {
                statistic = "00003"
            } else if text.contains("maximum") {
                statistic = "00001"
            } else if text.contains("minimum") {
                statistic = "00002"
            } else if text.contains("sum") || text.contains("total") {
                statistic = "00006"
            } else {
                statistic = "00003"  // a daily value is a daily mean unless it says otherwise
            }
            return (code, statistic)
        }
        return nil
    }

    struct State {
        var batch = SourceBatch()
        var stations = StationList()
        var namer = SeriesNamer()
        var layout: Layout?
        var expectFormatRow = false
        /// Metric names of the current layout's value columns, per site.
        var metrics: [String: [String]] = [:]
        /// Site names from the comment header (`#    USGS 09512500 AGUA FRIA RIVER NEAR MAYER, AZ`).
        var listedNames: [String: String] = [:]
        var listedOrder: [(site: String, agency: String)] = []
        var inSiteListing = false
        /// The comment lines since the last table (at most `headerLimit`).
        var header: [Substring] = []
        static let headerLimit = 500

        mutating func comment(_ line: Substring) {
            let body = line.dropFirst()
            if header.count < Self.headerLimit { header.append(body) }
            if (body.contains("Data for the following") && body.contains("site"))
                || body.contains("Sites in this file include")
            {
                inSiteListing = true
                return
            }
            guard inSiteListing else { return }
            let trimmed = body.trimmingSpaces()
            if trimmed.isEmpty || trimmed.hasPrefix("---") {
                inSiteListing = false
                return
            }
            let words = trimmed.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            guard words.count >= 2, words[0].allSatisfy(\.isLetter), words[1].allSatisfy(\.isNumber) else { return }
            let site = String(words[1])
            guard !listedOrder.contains(where: { $0.site == site }) else { return }
            listedOrder.append((site, String(words[0])))
            if words.count == 3 { listedNames[site] = words[2].trimmingSpaces() }
        }

        mutating func row(_ line: Substring, number: Int) throws {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            if fields.first == "agency_cd" {
                layout = try Layout(columns: fields, line: number, header: header)
                header = []
                metrics = [:]
                expectFormatRow = true
                return
            }
            if expectFormatRow {
                guard fields.allSatisfy(isFormatField) else {
                    throw ParseError(
                        .malformed, format: format, line: number,
                        "expected the column-format row (5s 15s 20d …), got '\(ParseError.excerpt(line))'")
                }
                expectFormatRow = false
                return
            }
            guard let layout else {
                throw ParseError(
                    .malformed, format: format, line: number,
                    "expected the column-name row (agency_cd site_no …), got '\(ParseError.excerpt(line))'")
            }
            // A row with more or fewer fields than the header names would put its values under
            // the wrong columns (a qualifier read as a value): it is an error, not a guess.
            guard fields.count == layout.width || (layout.legacy && fields.count < layout.width) else {
                throw ParseError(
                    .malformed, format: format, line: number,
                    "\(fields.count) fields where the header names \(layout.width)")
            }
            func field(_ i: Int?) -> Substring {
                guard let i, i < fields.count else { return "" }
                return fields[i]
            }
            let site = field(layout.site).trimmingSpaces()
            guard !site.isEmpty else {
                throw ParseError(.missingField, format: format, line: number, "empty site_no")
            }
            let agency = field(layout.agency).trimmingSpaces()
            guard let datetime = layout.datetime else {
                siteRow(site: site, agency: agency, field: field)
                return
            }
            addStation(site: site, agency: agency)
            let time = try time(field(datetime), zone: layout.timeZone.map { field($0) }, line: number)
            let names = metricNames(for: site, layout: layout)
            for (column, metric) in zip(layout.values, names) {
                let text = field(column.index)
                let qualifier = field(column.qualifierIndex).trimmingSpaces()
                guard let value = ParserSupport.number(text),
                    !qualifier.split(separator: ":").contains(where: {
                        USGSParameters.outageQualifiers.contains(String($0))
                    })
                else {
                    batch.gaps += 1
                    continue
                }
                batch.readings.append(
                    Reading(
                        station: site, metric: metric, time: time, value: value,
                        unit: USGSParameters.unit(forCode: column.code), source: source,
                        quality: qualifier.isEmpty ? nil : qualifier))
            }
        }

        /// The metric of each value column for a site; the first column of a parameter keeps the plain
        /// name, further ones get `.<TS_ID>`.
        mutating func metricNames(for site: String, layout: Layout) -> [String] {
            if let names = metrics[site] { return names }
            let names = layout.values.map { column in
                namer.metric(
                    USGSParameters.metric(forCode: column.code, statistic: column.statistic), station: site,
                    discriminator: column.series)
            }
            metrics[site] = names
            return names
        }

        func time(_ text: Substring, zone: Substring?, line: Int) throws -> Int64 {
            let text = text.trimmingSpaces()
            if text.count == 10 {
                guard let day = ParserSupport.calendarDay(text) else {
                    throw ParseError(.badValue, format: format, line: line, "bad time '\(ParseError.excerpt(text))'")
                }
                return day
            }
            guard let zone else {
                throw ParseError(
                    .missingField, format: format, line: line,
                    "time '\(ParseError.excerpt(text))' without a tz_cd column")
            }
            let abbreviation = zone.trimmingSpaces()
            guard let offset = TimeZones.offsetSeconds(abbreviation: abbreviation) else {
                throw ParseError(
                    .badValue, format: format, line: line, "unknown time zone '\(ParseError.excerpt(abbreviation))'")
            }
            guard text.count >= 16, let local = Timestamp.parse(text + "Z") else {
                throw ParseError(.badValue, format: format, line: line, "bad time '\(ParseError.excerpt(text))'")
            }
            return local - Int64(offset)
        }

        mutating func addStation(site: String, agency: String) {
            guard !stations.contains(site) else { return }
            stations.add(
                StationInfo(
                    id: site, source: source, name: listedNames[site],
                    usgsID: agency.isEmpty || agency == "USGS" ? site : nil))
        }

        mutating func siteRow(site: String, agency: String, field: (Int?) -> Substring) {
            guard let layout, !stations.contains(site) else { return }
            var attributes: [String: String] = [:]
            let siteType = field(layout.siteType).trimmingSpaces()
            if !siteType.isEmpty { attributes["site_type_code"] = siteType }
            let huc = field(layout.huc).trimmingSpaces()
            if !huc.isEmpty { attributes["huc"] = huc }
            let name = field(layout.name).trimmingSpaces()
            stations.add(
                StationInfo(
                    id: site, source: source, name: name.isEmpty ? listedNames[site] : name,
                    latitude: ParserSupport.number(field(layout.latitude)),
                    longitude: ParserSupport.number(field(layout.longitude)),
                    usgsID: agency.isEmpty || agency == "USGS" ? site : nil, attributes: attributes))
        }

        mutating func finish() -> SourceBatch {
            // Sites the header lists but no row mentions are still stations of this document.
            for (site, agency) in listedOrder where !stations.contains(site) {
                addStation(site: site, agency: agency)
            }
            var out = batch
            out.stations = stations.stations
            return out
        }
    }

    /// `5s`, `15s`, `20d`, `14n`.
    static func isFormatField(_ field: Substring) -> Bool {
        let f = field.trimmingSpaces()
        guard let last = f.last, "sdnSDN".contains(last), f.count >= 2 else { return false }
        return f.dropLast().allSatisfy(\.isNumber)
    }
}
