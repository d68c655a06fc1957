import Foundation

/// The words of a receiver's storm summary (issue 41, "no storms"): the alerts folded past its
/// budget and still firing, by what they are about ("37 more alerts: 30 floods on 12 gauges, 7 air
/// alerts at 3 places — open the list: https://…/alerts"). Plain text: each destination escapes it
/// as it does any alert's summary (the places in it come from feeds and are hostile). Pure.
public struct FoldSummary: Sendable, Equatable {
    public struct Group: Sendable, Equatable {
        public var subject: SubjectPage
        public var alerts: Int
        public var stations: Int
        /// The first few places, in fold order.
        public var places: [String]
    }

    /// Folded alerts still firing, by subject, largest first.
    public var groups: [Group]
    /// Folded alerts still firing.
    public var firing: Int
    /// Alerts folded in the storm in all.
    public var total: Int
    public var receiver: String
    public var budget: Budget
    /// The site's alert list (nil without `external_url`).
    public var link: String?

    /// The most places named per group.
    public static let placesShown = 3

    public init(_ tally: FoldTally, receiver: String, budget: Budget, externalURL: String) {
        var places: [String: [String]] = [:]
        var seen: [String: Set<String>] = [:]
        for p in tally.places where places[p.subject, default: []].count < Self.placesShown {
            if seen[p.subject, default: []].insert(p.station).inserted {
                places[p.subject, default: []].append(p.place)
            }
        }
        self.groups = tally.subjects.filter { $0.firing > 0 }.enumerated()
            .sorted { ($1.element.firing, $0.offset) < ($0.element.firing, $1.offset) }
            .map { _, s in
                Group(
                    subject: SubjectPage(rawValue: s.subject) ?? .station, alerts: s.firing, stations: s.stations,
                    places: places[s.subject] ?? [])
            }
        self.firing = tally.subjects.reduce(0) { $0 + $1.firing }
        self.total = tally.subjects.reduce(0) { $0 + $1.total }
        self.receiver = receiver
        self.budget = budget
        var base = externalURL
        while base.hasSuffix("/") { base.removeLast() }
        self.link = base.isEmpty ? nil : base + "/alerts"
    }

    /// `37 more alerts` (a title).
    public var headline: String {
        firing == 0
            ? "all \(total) folded \(total == 1 ? "alert" : "alerts") resolved"
            : "\(firing) more \(firing == 1 ? "alert" : "alerts")"
    }

    /// One line, then why.
    public var text: String {
        var out: String
        if firing == 0 {
            out = "All \(total) \(total == 1 ? "alert" : "alerts") folded in this storm have resolved"
        } else {
            out = "\(firing) more \(firing == 1 ? "alert" : "alerts")"
            out += ": " + groups.map(Self.words).joined(separator: ", ")
            if total > firing { out += " (\(total - firing) resolved since)" }
        }
        if let link { out += " — open the list: \(link)" }
        return out + ". Folded into this one message: \(receiver) is over its budget of \(budget.description)."
    }

    /// `30 floods on 12 gauges (Potomac River at Little Falls, …)`.
    static func words(_ g: Group) -> String {
        let (one, many, place, places): (String, String, String?, String?) =
            switch g.subject {
            case .gauge: ("flood", "floods", "gauge", "gauges")
            case .air: ("air alert", "air alerts", "place", "places")
            case .quakes: ("quake alert", "quake alerts", nil, nil)
            case .trip: ("trip alert", "trip alerts", "trip", "trips")
            case .station: ("weather alert", "weather alerts", "station", "stations")
            }
        var out = "\(g.alerts) \(g.alerts == 1 ? one : many)"
        if let place, let places {
            out += (g.subject == .air ? " at " : " on ") + "\(g.stations) \(g.stations == 1 ? place : places)"
        }
        if !g.places.isEmpty, g.subject != .quakes {
            out += " (" + g.places.joined(separator: ", ") + (g.stations > g.places.count ? ", …" : "") + ")"
        }
        return out
    }
}
