import Foundation

/// Where the thing an alert is about lives on the status site: a river gauge's page for water
/// metrics, a city's air page for AQI, the quakes list, a trip's page, or a weather station's page.
/// Messages link to it and show its chart; the site's own lists link the same way. Pure.
public enum SubjectPage: String, Sendable, CaseIterable {
    case gauge, air, quakes, trip, station

    /// The page kind for a series' metric (`gage_height`, `discharge.max`, `aqi`, `quake`, `packing`, …).
    public static func of(metric: String) -> SubjectPage {
        let base = metric.split(separator: ".").first.map(String.init) ?? metric
        switch base {
        case "gage_height", "stage", "discharge", "flow", "precipitation": return .gauge
        case "aqi", "pm25", "pm10", "o3", "no2": return .air
        case "quake": return .quakes
        case "packing": return .trip
        default: return metric.hasPrefix("alert:") ? .trip : .station
        }
    }

    /// The site path of a series' page (`/gauges/01646500`), its id percent-encoded as one segment;
    /// nil for a station id that names no page (`*`, empty).
    public static func path(station: String, metric: String) -> String? {
        let kind = of(metric: metric)
        switch kind {
        case .quakes: return "/quakes"
        case .trip:
            // A trip's station is `OWNER/NAME`; its page is the owner's `/trips/NAME`.
            guard let name = station.split(separator: "/", maxSplits: 1).last, !name.isEmpty else { return nil }
            return "/trips/" + segment(String(name))
        default:
            guard !station.isEmpty, station != "*" else { return nil }
            return kind.prefix + segment(station)
        }
    }

    /// The PNG chart of a series' page (`/gauges/01646500/chart.png?range=48h`); nil where the page
    /// has no chart (quakes, trips). A weather station's page charts every metric, so its picture
    /// names the one (`/stations/MWN/chart.png?range=48h&metric=wind_speed`).
    public static func chartPath(station: String, metric: String, range: String = "48h") -> String? {
        let kind = of(metric: metric)
        guard kind == .gauge || kind == .air || kind == .station, let page = path(station: station, metric: metric)
        else { return nil }
        let chart = page + "/chart.png?range=" + segment(range)
        return kind == .station ? chart + "&metric=" + segment(metric) : chart
    }

    var prefix: String {
        switch self {
        case .gauge: return "/gauges/"
        case .air: return "/air/"
        case .quakes: return "/quakes"
        case .trip: return "/trips/"
        case .station: return "/stations/"
        }
    }

    /// One path segment: every byte but RFC 3986's unreserved characters percent-encoded.
    public static func segment(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
