import Foundation
import KlaxonApp
import KlaxonCore

/// What the demo's upstream stand-ins serve: `length` seconds of a made-up world starting at
/// `start`, as functions of the scenario time. Payloads are in the services' real formats, so the
/// daemon reads them with the same sources and parsers it uses in production.
///
/// - A river (USGS site 01100500, NWS gauge RVTM3) rises from 6 ft through action (9), minor (11)
///   and moderate (13), crests at 13.7 ft about 8½ hours in, and recedes. Its official forecast,
///   issued 16 hours before the story starts (a day before the crest), already has the flood:
///   moderate flood stage about 8 hours in, crest near 13.3 ft.
/// - Delhi's AQI (India NAQI) worsens from moderate to poor to very poor; Mumbai stays satisfactory.
/// - An M6.8 earthquake off the Boso peninsula, about 130 km from Tokyo, appears in the feed six
///   hours in and is revised to M7.0 (reviewed, PAGER yellow) two hours later.
/// - A ski trip to Denver saved by `demo`: the forecast for it turns snowy nine hours in, and AirNow's
///   forecast (stored when the story starts) makes its first day an ozone Action Day.
/// - A summit weather station (NWS KRSM) reports every 10 minutes: a windstorm crosses it, the wind
///   rising from the low 20s past 50 mph about nine and a half hours in, peaking near 67 mph and
///   dropping back below 40 mph about thirteen hours in.
public struct DemoScenario: Sendable {
    /// Scenario seconds since the epoch when the story begins (a quarter-hour boundary).
    public let start: Int64
    /// How long the story runs, in scenario seconds.
    public let length: Int64

    public init(start: Int64, length: Int64 = 18 * 3_600) {
        self.start = start - start % 900
        self.length = length
    }

    /// The story's last moment; the stand-ins serve nothing newer.
    public var end: Int64 { start + length }

    func hours(_ t: Int64) -> Double { Double(t - start) / 3_600 }

    // MARK: The river

    public static let site = "01100500"
    public static let lid = "RVTM3"
    public static let riverName = "Mill River at Riverton"
    public static let categories: [(name: String, stage: Double)] = [
        ("action", 9), ("minor", 11), ("moderate", 13), ("major", 16),
    ]

    /// The stage (ft) at scenario time `t`: a flood wave that rises faster than it falls.
    public func stage(at t: Int64) -> Double {
        let h = hours(t)
        let crest = 8.5
        let width = h < crest ? 3.5 : 5.5
        let wave = 7.7 * exp(-pow((h - crest) / width, 2))
        let ripple = 0.03 * sin(h * 2.1)
        return ((6 + wave + ripple) * 100).rounded() / 100
    }

    /// Gage-height readings every 15 minutes from `from` to `to` (both clamped to the story, which
    /// has a day of quiet river before it).
    public func riverTimes(from: Int64, to: Int64) -> [Int64] {
        let first = max(from, start - 86_400)
        let last = min(to, end)
        guard first <= last else { return [] }
        let aligned = first % 900 == 0 ? first : first + (900 - first % 900)
        return Array(stride(from: aligned, through: last, by: 900))
    }

    /// A page of the USGS Water Data OGC API's `continuous` collection
    /// (`/ogcapi/v0/collections/continuous/items?…&time=FROM/..`) for the site's gage height between `from`
    /// and `to`: one GeoJSON Feature per value, UTC times, as the service sends them. The one page holds them all
    /// (a day of 15-minute values is far below the `limit` the source asks for), so it has no `next` link.
    public func usgsOGC(from: Int64, to: Int64) -> String {
        let site = Self.site
        let features = riverTimes(from: from, to: to).map { t -> String in
            let time = Timestamp.format(t).dropLast() + "+00:00"  // 2026-…THH:MM:SS+00:00
            return
                #"{"type":"Feature","id":"demo-\#(t)","geometry":{"type":"Point","coordinates":[-73.0201,41.9612]},"properties":{"id":"demo-\#(t)","time_series_id":"0a1b2c3d4e5f","monitoring_location_id":"USGS-\#(site)","parameter_code":"00065","statistic_id":"00011","time":"\#(time)","value":"\#(String(format: "%.2f", stage(at: t)))","unit_of_measure":"ft","approval_status":"Provisional","qualifier":null,"last_modified":"\#(time)"}}"#
        }.joined(separator: ",")
        let count = riverTimes(from: from, to: to).count
        return #"""
            {"type":"FeatureCollection","features":[\#(features)],"numberReturned":\#(count),"links":[{"type":"application/geo+json","rel":"self","title":"This document as GeoJSON","href":"http://127.0.0.1/ogcapi/v0/collections/continuous/items?f=json"}]}
            """#
    }

    /// The site's `monitoring-locations` Feature (`/ogcapi/v0/collections/monitoring-locations/items/USGS-…`):
    /// its name, position and time zone, read on the source's first fetch.
    public func usgsOGCLocation() -> String {
        let site = Self.site
        return #"""
            {"type":"Feature","id":"USGS-\#(site)","geometry":{"type":"Point","coordinates":[-73.0201,41.9612]},"properties":{"id":"USGS-\#(site)","agency_code":"USGS","agency_name":"U.S. Geological Survey","monitoring_location_number":"\#(site)","monitoring_location_name":"MILL RIVER AT RIVERTON, CT","state_name":"Connecticut","site_type_code":"ST","site_type":"Stream","time_zone_abbreviation":"EST","uses_daylight_savings":"Y"},"links":[]}
            """#
    }

    /// The NWPS gauge document (`/nwps/v1/gauges/RVTM3`): name, USGS id and flood categories.
    public func nwpsGauge() -> String {
        let cats = Self.categories.map { c -> String in #""\#(c.name)":{"stage":\#(c.stage),"flow":-9999}"# }.joined(
            separator: ",")
        return #"""
            {"lid":"\#(Self.lid)","usgsId":"\#(Self.site)","reachId":"7700001","name":"\#(Self.riverName)","description":"\#(Self.riverName), CT","rfc":{"abbreviation":"NERFC","name":"Northeast River Forecast Center"},"wfo":{"abbreviation":"BOX","name":"Boston/Norton"},"state":{"abbreviation":"CT","name":"Connecticut"},"county":"Litchfield","timeZone":"EST5EDT","latitude":41.9612,"longitude":-73.0201,"pedts":{"observed":"HGIRG","forecast":"HGIFF"},"status":{"observed":{"primary":6.0,"primaryUnit":"ft","secondary":-999,"secondaryUnit":"kcfs","floodCategory":"no_flooding","validTime":"\#(Timestamp.format(start))"},"forecast":{"primary":-999,"primaryUnit":"","secondary":-999,"secondaryUnit":"","floodCategory":"","validTime":""}},"flood":{"stageUnits":"ft","flowUnits":"cfs","categories":{\#(cats)},"lro":null,"crests":{"historic":[],"recent":[]},"lowWaters":{"historic":[]},"impacts":[]},"inService":{"enabled":true,"message":""},"ObservedFloodCategory":"no_flooding","ForecastFloodCategory":"no_flooding"}
            """#
    }

    /// When the river forecast the NWPS stand-in serves was issued: 16 hours before the story starts,
    /// about a day before the crest.
    public var forecastIssued: Int64 { start - 16 * 3_600 }

    /// That issuance's stage (ft) at `t`: the flood a day ahead, cresting when the river will (near
    /// 13.3 ft), and receding faster than the river will (so once the observed alert has taken over,
    /// the forecast never reaches above the observed river again).
    public func forecastStage(at t: Int64) -> Double {
        let h = hours(t)
        let width = h < 8.5 ? 3.5 : 4.0
        return ((6 + 7.4 * exp(-pow((h - 8.5) / width, 2))) * 100).rounded() / 100
    }

    /// NWPS `/gauges/RVTM3/stageflow/forecast`: the issuance, hourly for 48 hours after its issue
    /// time, stage only (flow -999, as NWPS sends a series it does not forecast).
    public func nwpsForecast() -> String {
        let issued = Timestamp.format(forecastIssued)
        let points = stride(from: forecastIssued + 3_600, through: forecastIssued + 48 * 3_600, by: 3_600).map {
            t -> String in
            #"{"validTime":"\#(Timestamp.format(t))","generatedTime":"\#(issued)","primary":\#(String(format: "%.2f", forecastStage(at: t))),"secondary":-999}"#
        }.joined(separator: ",")
        return #"""
            {"pedts":"HGIFF","issuedTime":"\#(issued)","wfo":"BOX","timeZone":"EST5EDT","primaryName":"Stage","primaryUnits":"ft","secondaryName":"Flow","secondaryUnits":"kcfs","data":[\#(points)]}
            """#
    }

    // MARK: Air quality

    /// Delhi's AQI (India NAQI) at `t`: linear between these (hour, AQI) points, with a small wobble.
    static let delhi: [(Double, Double)] = [
        (0, 168), (4, 186), (5, 236), (8, 262), (10.5, 284), (11.5, 338), (18, 356),
    ]

    public func aqi(city: String, at t: Int64) -> Double {
        let h = hours(min(t, end))
        guard city == "Delhi" else { return (88 + 4 * sin(h)).rounded() }
        var value = Self.delhi.last!.1
        for (a, b) in zip(Self.delhi, Self.delhi.dropFirst()) where h >= a.0 && h < b.0 {
            value = a.1 + (b.1 - a.1) * (h - a.0) / (b.0 - a.0)
        }
        return (value + 2 * sin(h * 3)).rounded()
    }

    /// One frame of the city AQI WebSocket feed: a JSON array of `{"city", "aqi"}`; Delhi's value at
    /// most `delhiCap`.
    public func aqiFrame(at t: Int64, delhiCap: Double = .infinity) -> String {
        "["
            + ["Delhi", "Mumbai"].map { city -> String in
                let value = city == "Delhi" ? min(aqi(city: city, at: t), delhiCap) : aqi(city: city, at: t)
                return #"{"city":"\#(city)","aqi":\#(value)}"#
            }
            .joined(separator: ",")
            + "]"
    }

    /// The highest AQI Delhi may show when the daemon last announced `announced` (an India NAQI level
    /// name; nil: nothing yet): the top of the level above it, or of the story's first level
    /// (Moderate) before any. So the story's levels are told one by one however late the daemon
    /// samples the feed.
    public static func airCap(announced: String?) -> Double {
        let levels = AQIScale.indiaNAQI.levels
        let first = levels.firstIndex { $0.name == "Moderate" } ?? 0
        guard let announced, let i = levels.firstIndex(where: { $0.name == announced }) else {
            return levels[first].upper
        }
        return i + 1 < levels.count ? levels[i + 1].upper : .infinity
    }

    // MARK: The earthquake

    public static let quakeID = "us7000demo"
    /// Origin time, when it reaches the feed, and when it is revised (hours into the story).
    static let quakeOrigin = 6.0
    static let quakeListed = 6.2
    static let quakeRevised = 8.2

    /// Whether the quake is in the feed at `t`.
    public func quakeListed(at t: Int64) -> Bool { hours(min(t, end)) >= Self.quakeListed }

    /// The USGS `significant_day` GeoJSON feed at `t`: empty before the quake is listed, then the
    /// automatic M6.8, then (when `revisable`) the reviewed M7.0.
    public func quakeFeed(at t: Int64, revisable: Bool = true) -> String {
        let h = hours(min(t, end))
        var features: [String] = []
        if h >= Self.quakeListed {
            let revised = revisable && h >= Self.quakeRevised
            let origin = (start + Int64(Self.quakeOrigin * 3_600)) * 1000
            let updated =
                (start + Int64((revised ? Self.quakeRevised : Self.quakeListed) * 3_600)) * 1000
            let mag = revised ? 7.0 : 6.8
            let alert = revised ? #""yellow""# : "null"
            let status = revised ? "reviewed" : "automatic"
            let sig = revised ? 1_044 : 912
            let place = "58 km SSE of Kamogawa, Japan"
            features.append(
                #"{"type":"Feature","properties":{"mag":\#(mag),"place":"\#(place)","time":\#(origin),"updated":\#(updated),"tz":null,"url":"https://earthquake.usgs.gov/earthquakes/eventpage/\#(Self.quakeID)","detail":"https://earthquake.usgs.gov/earthquakes/feed/v1.0/detail/\#(Self.quakeID).geojson","felt":null,"cdi":null,"mmi":null,"alert":\#(alert),"status":"\#(status)","tsunami":\#(revised ? 1 : 0),"sig":\#(sig),"net":"us","code":"7000demo","ids":",\#(Self.quakeID),","sources":",us,","types":",origin,phase-data,","nst":null,"dmin":1.9,"rms":0.71,"gap":38,"magType":"mww","type":"earthquake","title":"M \#(mag) - \#(place)"},"geometry":{"type":"Point","coordinates":[140.31,34.62,28.4]},"id":"\#(Self.quakeID)"}"#
            )
        }
        let generated = min(t, end) * 1000
        return
            #"{"type":"FeatureCollection","metadata":{"generated":\#(generated),"url":"https://earthquake.usgs.gov/earthquakes/feed/v1.0/summary/significant_day.geojson","title":"USGS Significant Earthquakes, Past Day","status":200,"api":"1.14.1","count":\#(features.count)},"features":[\#(features.joined(separator: ","))]}"#
    }

    // MARK: The summit station

    public static let summitStation = "KRSM"
    public static let summitName = "Mount Riverton Summit"

    /// The sustained wind (mph) at `t`: a storm that peaks 11 hours in.
    public func wind(at t: Int64) -> Double {
        let h = hours(t)
        let storm = 45 * exp(-pow((h - 11) / 2.2, 2))
        return ((22 + storm + 2 * sin(h * 1.7)) * 100).rounded() / 100
    }

    /// Observation times every 10 minutes from `from` to `to`, clamped to the story and the 48 hours
    /// of observations before its end (what NWS keeps and the source backfills).
    public func summitTimes(from: Int64, to: Int64) -> [Int64] {
        let first = max(from, end - 48 * 3_600)
        let last = min(to, end)
        guard first <= last else { return [] }
        let aligned = first % 600 == 0 ? first : first + (600 - first % 600)
        return Array(stride(from: aligned, through: last, by: 600))
    }

    /// The NWS station document (`/stations/KRSM`).
    public func nwsStation() -> String {
        let id = Self.summitStation
        return #"""
            {"@context":["https://geojson.org/geojson-ld/geojson-context.jsonld"],"id":"https://api.weather.gov/stations/\#(id)","type":"Feature","geometry":{"type":"Point","coordinates":[-73.0512,41.9935]},"properties":{"@id":"https://api.weather.gov/stations/\#(id)","@type":"wx:ObservationStation","elevation":{"unitCode":"wmoUnit:m","value":1917},"stationIdentifier":"\#(id)","name":"\#(Self.summitName)","timeZone":"America/New_York","forecast":"https://api.weather.gov/zones/forecast/CTZ001","county":"https://api.weather.gov/zones/county/CTC005","fireWeatherZone":"https://api.weather.gov/zones/fire/CTZ001"}}
            """#
    }

    /// The station's observations between `from` and `to` (`/stations/KRSM/observations?start=…`),
    /// newest first as NWS sends them, in NWS units (km/h, °C, Pa, m).
    public func nwsObservations(from: Int64, to: Int64) -> String {
        let id = Self.summitStation
        func q(_ code: String, _ value: Double?, _ qc: String = "V") -> String {
            let v = value.map { String(format: "%.2f", $0) } ?? "null"
            return #"{"unitCode":"wmoUnit:\#(code)","value":\#(v),"qualityControl":"\#(qc)"}"#
        }
        let features = summitTimes(from: from, to: to).reversed().map { t -> String in
            let mph = wind(at: t)
            let kmh = mph * 1.609_344
            let h = hours(t)
            let gust = mph > 35 ? kmh * 1.35 : nil
            let temperature = -6 - 3 * sin(h / 24 * 2 * .pi)
            let humidity = min(100, 78 + 20 * exp(-pow((h - 11) / 3, 2)))
            let stamp = Timestamp.format(t).replacingOccurrences(of: "Z", with: "+00:00")
            return #"""
                {"id":"https://api.weather.gov/stations/\#(id)/observations/\#(stamp)","type":"Feature","geometry":{"type":"Point","coordinates":[-73.0512,41.9935]},"properties":{"@id":"https://api.weather.gov/stations/\#(id)/observations/\#(stamp)","@type":"wx:ObservationStation","elevation":{"unitCode":"wmoUnit:m","value":1917},"station":"https://api.weather.gov/stations/\#(id)","stationId":"\#(id)","stationName":"\#(Self.summitName)","timestamp":"\#(stamp)","rawMessage":"","textDescription":"\#(mph > 45 ? "Windy" : "Cloudy")","presentWeather":[],"temperature":\#(q("degC", temperature)),"dewpoint":\#(q("degC", temperature - 1.5)),"windDirection":\#(q("degree_(angle)", 290)),"windSpeed":\#(q("km_h-1", kmh)),"windGust":\#(q("km_h-1", gust, "S")),"barometricPressure":\#(q("Pa", 80_500 - 400 * exp(-pow((h - 11) / 4, 2)))),"seaLevelPressure":\#(q("Pa", nil, "Z")),"visibility":\#(q("m", mph > 45 ? 400 : 16_090)),"maxTemperatureLast24Hours":\#(q("degC", nil)),"minTemperatureLast24Hours":\#(q("degC", nil)),"precipitationLastHour":\#(q("mm", nil, "Z")),"relativeHumidity":\#(q("percent", humidity)),"windChill":\#(q("degC", temperature - 12)),"heatIndex":\#(q("degC", nil)),"cloudLayers":[{"base":{"unitCode":"wmoUnit:m","value":120},"amount":"OVC"}]}}
                """#
        }
        return #"{"@context":{"@version":"1.1"},"type":"FeatureCollection","features":["#
            + features.joined(separator: ",")
            + "]}"
    }

    // MARK: The trip

    public static let tripOwner = "demo"
    public static let tripName = "denver-ski"

    /// A three-night trip to Denver starting three days after the story ends.
    public var trip: Trip {
        let arrive = String(Timestamp.format(end + 3 * 86_400).prefix(10))
        return Trip(
            name: Self.tripName, owner: Self.tripOwner,
            stops: [
                .init(
                    place: "Denver, Colorado", latitude: 39.7392, longitude: -104.9903, timeZone: "America/Denver",
                    arrive: arrive, nights: 3)
            ],
            activities: ["hiking"], preferences: PackingPreferences(units: .imperial))
    }

    /// AirNow's forecast for the Denver-Boulder reporting area, issued the day the story starts: the
    /// trip's first day an ozone Action Day (Unhealthy for Sensitive Groups), its second Moderate.
    public var airForecasts: [AirForecast] {
        let issued = String(Timestamp.format(start).prefix(10))
        let days = Packer.days(of: trip).map(\.date)
        guard days.count >= 2 else { return [] }
        func forecast(_ date: String, aqi: Int, category: Int, actionDay: Bool) -> AirForecast {
            AirForecast(
                area: "Denver-Boulder", state: "CO", latitude: 39.768, longitude: -105.0092, date: date,
                parameter: "O3", aqi: aqi, category: category, actionDay: actionDay,
                discussion: "High pressure and light winds trap ozone along the Front Range.", issued: issued)
        }
        return [
            forecast(days[0], aqi: 125, category: 3, actionDay: true),
            forecast(days[1], aqi: 78, category: 2, actionDay: false),
        ]
    }

    /// When the forecast turns snowy (hours into the story).
    static let snowTurn = 9.0

    /// An Open-Meteo daily forecast (`/v1/forecast`) for Denver: 16 local days from `t`'s date.
    /// Before the turn the trip's days are dry and mild; after it, the first two are cold and snowy.
    public func openMeteo(at t: Int64) -> String {
        let now = min(t, end)
        let snowy = hours(now) >= Self.snowTurn
        let tripDays = Set(Packer.days(of: trip).map(\.date))
        let firstTripDay = tripDays.min() ?? ""
        var dates: [String] = []
        var rows: [(max: Double, min: Double, rain: Double, pop: Double, snow: Double, wind: Double, code: Int)] = []
        for d in 0..<16 {
            let date = String(Timestamp.format(now - 7 * 3_600 + Int64(d) * 86_400).prefix(10))
            dates.append(date)
            let storm = snowy && tripDays.contains(date) && date <= dayAfter(firstTripDay)
            rows.append(
                storm
                    ? (-4.5, -12.0, 16.8, 90, 19.6, 38, 75)
                    : (13.0 + Double(d % 3), 1.0 + Double(d % 2), 0, 5, 0, 14, 1))
        }
        func list(_ f: (Int) -> String) -> String { "[" + rows.indices.map(f).joined(separator: ",") + "]" }
        return """
            {"latitude":39.74,"longitude":-104.99,"generationtime_ms":0.21,"utc_offset_seconds":-25200,"timezone":"America/Denver","timezone_abbreviation":"MST","elevation":1609.0,"daily_units":{"time":"iso8601","temperature_2m_max":"°C","temperature_2m_min":"°C","precipitation_sum":"mm","precipitation_probability_max":"%","snowfall_sum":"cm","wind_speed_10m_max":"km/h","weather_code":"wmo code"},"daily":{"time":\(list { "\"\(dates[$0])\"" }),"temperature_2m_max":\(list { "\(rows[$0].max)" }),"temperature_2m_min":\(list { "\(rows[$0].min)" }),"precipitation_sum":\(list { "\(rows[$0].rain)" }),"precipitation_probability_max":\(list { "\(Int(rows[$0].pop))" }),"snowfall_sum":\(list { "\(rows[$0].snow)" }),"wind_speed_10m_max":\(list { "\(rows[$0].wind)" }),"weather_code":\(list { "\(rows[$0].code)" })}}
            """
    }

    func dayAfter(_ date: String) -> String {
        guard let t = Timestamp.parse(date + "T12:00:00Z") else { return date }
        return String(Timestamp.format(t + 86_400).prefix(10))
    }
}
