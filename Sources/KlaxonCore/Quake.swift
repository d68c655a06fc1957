import Foundation

/// One earthquake (or quarry blast, explosion, …) as the USGS reports it in one version of its
/// GeoJSON feeds. An event is revised many times (magnitude, location, PAGER alert, review status)
/// and may finally be deleted; each version carries a later `updated`.
public struct QuakeEvent: Sendable, Hashable, Codable {
    /// The feature id (`us6000len8`): the preferred id of the event.
    public var id: String
    /// Every id the event is known by (`ids`, comma-wrapped in the feed), in feed order; it always
    /// contains `id`. Events reported by two networks merge under one preferred id.
    public var ids: [String]
    /// Origin time, milliseconds since the epoch (UTC).
    public var time: Int64
    /// When this version was published, milliseconds since the epoch (UTC).
    public var updated: Int64
    /// Magnitude, rounded to 0.001 (`4.4000000000000004` → `4.4`); may be negative; nil when unknown.
    public var magnitude: Double?
    /// `mww`, `mb`, `ml`, `md`, … as the feed writes it.
    public var magType: String?
    /// `35 km SSW of Herat, Afghanistan` or a region (`western Afghanistan`).
    public var place: String?
    public var title: String?
    public var latitude: Double
    public var longitude: Double
    public var depthKm: Double?
    /// The USGS significance (0 to ~3000), from magnitude, felt reports and estimated impact.
    public var sig: Int?
    /// The PAGER alert level, lowercased: `green`, `yellow`, `orange`, `red`, or nil.
    public var alert: String?
    /// The feed's tsunami flag: set for large events in oceanic regions, not a tsunami warning.
    public var tsunami: Bool
    /// `automatic`, `reviewed` or `deleted`, lowercased.
    public var status: String
    /// `earthquake`, `quarry blast`, `explosion`, … lowercased.
    public var type: String
    /// The event page.
    public var url: String?
    /// Number of "Did You Feel It?" reports.
    public var felt: Int?
    /// Maximum reported intensity (DYFI).
    public var cdi: Double?
    /// Maximum estimated instrumental intensity (ShakeMap).
    public var mmi: Double?
    /// Minutes from UTC at the epicenter, when the feed gives it (older feeds); nil otherwise.
    public var tz: Int?

    /// Lowercases `status`, `type` and `alert`, rounds `magnitude` to 0.001 and puts `id` into `ids`
    /// when it is missing there.
    public init(
        id: String, ids: [String] = [], time: Int64, updated: Int64, magnitude: Double? = nil, magType: String? = nil,
        place: String? = nil, title: String? = nil, latitude: Double, longitude: Double, depthKm: Double? = nil,
        sig: Int? = nil, alert: String? = nil, tsunami: Bool = false, status: String = "automatic",
        type: String = "earthquake", url: String? = nil, felt: Int? = nil, cdi: Double? = nil, mmi: Double? = nil,
        tz: Int? = nil
    ) {
        self.id = id
        self.ids = ids.contains(id) ? ids : [id] + ids
        self.time = time
        self.updated = updated
        self.magnitude = magnitude.map(Self.roundMagnitude)
        self.magType = magType
        self.place = place
        self.title = title
        self.latitude = latitude
        self.longitude = longitude
        self.depthKm = depthKm
        self.sig = sig
        self.alert = alert?.lowercased()
        self.tsunami = tsunami
        self.status = status.lowercased()
        self.type = type.lowercased()
        self.url = url
        self.felt = felt
        self.cdi = cdi
        self.mmi = mmi
        self.tz = tz
    }

    /// USGS deleted the event (a false detection or a duplicate).
    public var isDeleted: Bool { status == "deleted" }

    /// The origin time in whole seconds (Klaxon's time unit), rounded toward the earlier second.
    public var timeSeconds: Int64 { Self.seconds(time) }

    /// `4.4000000000000004` → `4.4`.
    static func roundMagnitude(_ m: Double) -> Double {
        guard m.isFinite else { return m }
        return (m * 1000).rounded() / 1000
    }

    static func seconds(_ milliseconds: Int64) -> Int64 {
        milliseconds / 1000 - (milliseconds % 1000 < 0 ? 1 : 0)  // floor, without overflowing near Int64.min
    }
}

/// Distances on the Earth's surface.
public enum Geo {
    /// The mean Earth radius (IUGG), km.
    public static let earthRadiusKm = 6371.0088

    /// Great-circle distance in km between two points given in degrees (haversine formula).
    public static func distanceKm(lat1: Double, lon1: Double, lat2: Double, lon2: Double) -> Double {
        let rad = Double.pi / 180
        let dLat = (lat2 - lat1) * rad
        let dLon = (lon2 - lon1) * rad
        let s1 = sin(dLat / 2)
        let s2 = sin(dLon / 2)
        let a = s1 * s1 + cos(lat1 * rad) * cos(lat2 * rad) * s2 * s2
        return 2 * earthRadiusKm * asin(min(1, a.squareRoot()))
    }
}

/// The USGS PAGER alert levels (estimated fatalities and losses), lowest first.
public enum PagerLevel: Int, Sendable, Comparable, CaseIterable {
    case green = 1
    case yellow, orange, red

    /// `"orange"`, `"ORANGE"` → `.orange`; nil for nil, `""` or anything else.
    public init?(_ name: String?) {
        guard let name else { return nil }
        switch name.trimmingCharacters(in: .whitespaces).lowercased() {
        case "green": self = .green
        case "yellow": self = .yellow
        case "orange": self = .orange
        case "red": self = .red
        default: return nil
        }
    }

    /// `green`, `yellow`, `orange`, `red`.
    public var name: String {
        switch self {
        case .green: "green"
        case .yellow: "yellow"
        case .orange: "orange"
        case .red: "red"
        }
    }

    public static func < (a: PagerLevel, b: PagerLevel) -> Bool { a.rawValue < b.rawValue }
}
