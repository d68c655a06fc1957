import Foundation

/// `kind: quake` — announces earthquakes from the USGS feeds that meet the rule: a minimum
/// magnitude and, optionally, a maximum depth, a minimum significance, a minimum PAGER alert, the
/// tsunami flag, event types, reviewed events only, and closeness to watched places.
///
/// Quakes are events, not readings: the rule is of the quake family, not a series rule. The caller keeps, per event
/// id, what was last announced (`Announced`, stored as JSON) and asks `assess` about each version
/// of an event it fetches. A new quake fires once; later revisions that matter (magnitude, PAGER
/// level, review) are updates (`changed`), and a deletion by USGS is a withdrawal (`resolved`).
public struct QuakeRule: QuakeFamilyRule {
    public static let kindName = "quake"

    /// A place the rule watches: events count only within `radiusKm` of one of them.
    public struct Place: Sendable, Hashable {
        public var name: String
        public var latitude: Double
        public var longitude: Double
        public var radiusKm: Double
        /// `min_intensity`: the place counts only when the event's felt intensity estimated there
        /// (`FeltIntensity`, Atkinson & Wald 2007, the place's coefficient set) is at least this MMI.
        public var minIntensity: Double?

        public init(
            name: String, latitude: Double, longitude: Double, radiusKm: Double, minIntensity: Double? = nil
        ) {
            self.name = name
            self.latitude = latitude
            self.longitude = longitude
            self.radiusKm = radiusKm
            self.minIntensity = minIntensity
        }

        /// The felt intensity estimated at the place (nil without a magnitude).
        public func intensity(of e: QuakeEvent) -> Double? {
            let d = FeltIntensity.hypocentralKm(epicentralKm: distanceKm(to: e), depthKm: e.depthKm)
            return e.magnitude.flatMap {
                FeltIntensity.aw2007(
                    magnitude: $0, hypocentralKm: d,
                    region: FeltIntensity.Region.forPlace(latitude: latitude, longitude: longitude))
            }
        }

        /// Whether the event counts at this place: within the radius, and felt strongly enough there.
        func admits(_ e: QuakeEvent, distanceKm d: Double) -> Bool {
            guard d <= radiusKm else { return false }
            guard let minIntensity else { return true }
            return (intensity(of: e) ?? 0) >= minIntensity - 1e-9
        }

        /// Great-circle distance from the place to an event's epicenter, km.
        public func distanceKm(to e: QuakeEvent) -> Double {
            Geo.distanceKm(lat1: latitude, lon1: longitude, lat2: e.latitude, lon2: e.longitude)
        }
    }

    /// What was last announced for an event. The caller persists it (as JSON) per event id.
    public struct Announced: Sendable, Hashable, Codable {
        public var magnitude: Double?
        public var alert: String?
        public var status: String
        /// The `updated` (epoch ms) of the version announced.
        public var updated: Int64
        /// The withdrawal was announced: nothing more is said about the event.
        public var withdrawn: Bool

        public init(magnitude: Double?, alert: String?, status: String, updated: Int64, withdrawn: Bool = false) {
            self.magnitude = magnitude
            self.alert = alert
            self.status = status
            self.updated = updated
            self.withdrawn = withdrawn
        }

        /// What is announced for an event version.
        public init(_ e: QuakeEvent, withdrawn: Bool = false) {
            self.init(
                magnitude: e.magnitude, alert: e.alert, status: e.status, updated: e.updated, withdrawn: withdrawn)
        }
    }

    /// A magnitude revision at least this large is announced.
    public static let magnitudeStep = 0.1

    public var minMagnitude: Double
    public var maxDepthKm: Double?
    public var minSig: Int?
    public var alertAtLeast: PagerLevel?
    /// Only events with the feed's tsunami flag (`tsunami: true`).
    public var tsunamiOnly: Bool
    /// Only events within the radius of one of these places; empty means anywhere.
    public var near: [Place]
    /// Event types (`earthquake`, `quarry blast`, `explosion`, …), lowercase; empty means any type.
    public var types: Set<String>
    /// Only events a seismologist has reviewed.
    public var reviewedOnly: Bool

    public init(
        minMagnitude: Double, maxDepthKm: Double? = nil, minSig: Int? = nil, alertAtLeast: PagerLevel? = nil,
        tsunamiOnly: Bool = false, near: [Place] = [], types: Set<String> = ["earthquake"],
        reviewedOnly: Bool = false
    ) {
        self.minMagnitude = minMagnitude
        self.maxDepthKm = maxDepthKm
        self.minSig = minSig
        self.alertAtLeast = alertAtLeast
        self.tsunamiOnly = tsunamiOnly
        self.near = near
        self.types = Set(types.map { $0.lowercased() })
        self.reviewedOnly = reviewedOnly
    }

    /// The metric its transitions carry (`QuakeRunner`).
    public var metric: String { "quake" }

    // MARK: - Matching

    /// One condition of the rule, checked against one event version.
    struct Check {
        var holds: Bool
        /// `magnitude 6.3 mww ≥ 4.5` or `depth 80 km > 70 km`.
        var text: String
        /// The magnitude condition (a failure is "revised below the rule's threshold").
        var isMagnitude = false
    }

    /// Every condition of the rule against an event, and the watched place to report.
    struct Evaluation {
        var checks: [Check]
        /// The nearest place within its radius; when none is, the nearest place (nil when `near` is
        /// empty).
        var place: Place?
        var distanceKm: Double?

        var holds: Bool { checks.allSatisfy(\.holds) }
        var failed: [Check] { checks.filter { !$0.holds } }
    }

    func evaluate(_ e: QuakeEvent) -> Evaluation {
        var checks: [Check] = []
        let kind = e.magType.map { " \($0)" } ?? ""
        if let m = e.magnitude {
            let holds = m >= minMagnitude - 1e-9
            checks.append(
                Check(
                    holds: holds,
                    text: "magnitude \(formatValue(m))\(kind) \(holds ? "≥" : "<") \(formatValue(minMagnitude))",
                    isMagnitude: true))
        } else {
            checks.append(
                Check(holds: false, text: "no magnitude (min \(formatValue(minMagnitude)))", isMagnitude: true))
        }
        if types.isEmpty || types.contains(e.type) {
            checks.append(Check(holds: true, text: "type \(e.type)"))
        } else {
            checks.append(
                Check(holds: false, text: "type \(e.type) not in [\(types.sorted().joined(separator: ", "))]"))
        }
        if let maxDepthKm {
            if let d = e.depthKm {
                let holds = d <= maxDepthKm
                checks.append(
                    Check(holds: holds, text: "depth \(Self.km(d)) \(holds ? "≤" : ">") \(Self.km(maxDepthKm))"))
            } else {
                checks.append(Check(holds: false, text: "depth unknown (max \(Self.km(maxDepthKm)))"))
            }
        }
        if let minSig {
            if let sig = e.sig {
                let holds = sig >= minSig
                checks.append(Check(holds: holds, text: "sig \(sig) \(holds ? "≥" : "<") \(minSig)"))
            } else {
                checks.append(Check(holds: false, text: "sig unknown (min \(minSig))"))
            }
        }
        if let alertAtLeast {
            if let level = PagerLevel(e.alert) {
                let holds = level >= alertAtLeast
                checks.append(
                    Check(holds: holds, text: "PAGER \(level.name) \(holds ? "≥" : "<") \(alertAtLeast.name)"))
            } else {
                checks.append(Check(holds: false, text: "no PAGER alert (need \(alertAtLeast.name) or higher)"))
            }
        }
        if tsunamiOnly {
            checks.append(Check(holds: e.tsunami, text: e.tsunami ? "tsunami flag set" : "no tsunami flag"))
        }
        var place: Place?
        var distance: Double?
        if !near.isEmpty {
            let distances = near.map { ($0, $0.distanceKm(to: e)) }
            if let inside = distances.filter({ $0.0.admits(e, distanceKm: $0.1) }).min(by: { $0.1 < $1.1 }) {
                (place, distance) = (inside.0, inside.1)
                checks.append(Check(holds: true, text: Self.placeText(inside.0, inside.1, e, holds: true)))
            } else if let nearest = distances.min(by: { $0.1 < $1.1 }) {
                (place, distance) = (nearest.0, nearest.1)
                let felt = near.contains { $0.minIntensity != nil }
                checks.append(
                    Check(
                        holds: false,
                        text: Self.placeText(nearest.0, nearest.1, e, holds: false)
                            + (felt
                                ? " (no watched place within its radius and felt enough)"
                                : " (no watched place within its radius)")))
            }
        }
        if reviewedOnly {
            let holds = e.status == "reviewed"
            checks.append(Check(holds: holds, text: holds ? "status reviewed" : "status \(e.status), not reviewed"))
        }
        if e.isDeleted {
            checks.append(Check(holds: false, text: "deleted by USGS"))
        }
        return Evaluation(checks: checks, place: place, distanceKm: distance)
    }

    /// Does the event (as it is now) meet the rule? The nearest watched place within its radius and
    /// the distance to it (both nil when `near` is empty), or nil when the event does not match. A
    /// deleted event never matches.
    public func matches(_ e: QuakeEvent) -> (place: Place?, distanceKm: Double?)? {
        let evaluation = evaluate(e)
        guard evaluation.holds else { return nil }
        return (evaluation.place, evaluation.distanceKm)
    }

    // MARK: - Announcing

    /// Decides what to announce for an event version, given what was announced for the event
    /// before (nil: never).
    ///
    /// - Never announced: `firing` when it matches and is not deleted; otherwise nothing.
    /// - Announced, and this version is not newer (`updated` older or equal): nothing (a stale copy).
    /// - Announced, now deleted: `resolved` ("Withdrawn: …"), once; after that nothing more.
    /// - Announced, and the magnitude moved by 0.1 or more, the PAGER level changed, or the event
    ///   went from automatic to reviewed: `changed` — an update, never a second firing — even when
    ///   the revised event no longer meets the rule (the message says so).
    /// - Anything else: nothing.
    ///
    /// The change's `at` is the origin time in seconds for a new event and, for a revision or a
    /// withdrawal, the time USGS published it (`updated`, not before the origin): the data time
    /// `notify_max_age` measures, so an old quake is not news and a fresh revision of it is. `value`
    /// is the magnitude and `level` the PAGER alert. Returns the change and what to store as announced; on nil, keep what was stored.
    public func assess(_ e: QuakeEvent, announced: Announced?) -> (change: Change, announced: Announced)? {
        guard let before = announced else {
            let evaluation = evaluate(e)
            guard evaluation.holds else { return nil }
            let change = Change(
                state: .firing, at: e.timeSeconds, value: e.magnitude, level: PagerLevel(e.alert)?.name,
                summary: summary(e, evaluation),
                explanation: evaluation.checks.map(\.text).joined(separator: "; "),
                details: "event \(e.id) (\(e.status), updated \(Self.utc(e.updated))): "
                    + evaluation.checks.map(\.text).joined(separator: "; "), place: e.place,
                headline: Self.quakeHeadline(e))
            return (change, Announced(e))
        }
        guard !before.withdrawn, e.updated > before.updated else { return nil }
        if e.isDeleted {
            return (withdrawal(e, before), Announced(e, withdrawn: true))
        }
        var changes: [String] = []
        var reasons: [String] = []
        if Self.magnitudeMoved(from: before.magnitude, to: e.magnitude) {
            let (from, to) = Self.magnitudePair(before.magnitude, e.magnitude)
            changes.append("\(from) → \(to)")
            var reason = "magnitude \(from) → \(to)"
            if let old = before.magnitude, let new = e.magnitude {
                reason += " (Δ\(formatValue(abs(new - old))) ≥ \(formatValue(Self.magnitudeStep)))"
            }
            reasons.append(reason)
        }
        let oldLevel = PagerLevel(before.alert)
        let newLevel = PagerLevel(e.alert)
        if oldLevel != newLevel {
            let text = "PAGER \(oldLevel?.name ?? "none") → \(newLevel?.name ?? "none")"
            changes.append(text)
            reasons.append(text)
        }
        if before.status != "reviewed" && e.status == "reviewed" {
            changes.append("now reviewed")
            reasons.append("status \(before.status) → reviewed")
        }
        guard !changes.isEmpty else { return nil }
        let evaluation = evaluate(e)
        var why = "revision of event \(e.id) (updated \(Self.utc(e.updated))): " + reasons.joined(separator: "; ")
        if evaluation.holds {
            why += "; still meets the rule: " + evaluation.checks.map(\.text).joined(separator: "; ")
        } else {
            let failed = evaluation.failed
            if failed.contains(where: \.isMagnitude) {
                changes.append("revised below the rule's threshold (M\(formatValue(minMagnitude)))")
            }
            let others = failed.filter { !$0.isMagnitude }
            if !others.isEmpty {
                changes.append("no longer meets the rule (\(others.map(\.text).joined(separator: "; ")))")
            }
            why += "; no longer meets the rule: " + failed.map(\.text).joined(separator: "; ")
        }
        let change = Change(
            state: .changed, at: Self.revisionTime(e), value: e.magnitude, level: newLevel?.name,
            fromLevel: oldLevel != newLevel ? oldLevel?.name : nil,
            summary: "Update: " + changes.joined(separator: ", ") + " — " + summary(e, evaluation),
            explanation: changes.joined(separator: ", "), details: why, place: e.place,
            headline: Self.quakeHeadline(e) + ", revised")
        return (change, Announced(e))
    }

    /// When a version of an event was published (seconds; `updated`, never before the origin time).
    static func revisionTime(_ e: QuakeEvent) -> Int64 { max(e.timeSeconds, QuakeEvent.seconds(e.updated)) }

    /// `M7.0 earthquake` (`earthquake` without a magnitude): a quake's title after its place.
    static func quakeHeadline(_ e: QuakeEvent) -> String {
        (e.magnitude.map { "M\(formatValue($0)) " } ?? "") + "earthquake"
    }

    func withdrawal(_ e: QuakeEvent, _ before: Announced) -> Change {
        let magnitude = (before.magnitude ?? e.magnitude).map { Self.magnitude($0) + " " } ?? ""
        var place: String
        if let p = e.place, !p.isEmpty {
            place = Self.startsWithDistance(p) ? " \(p)" : " near \(p)"
        } else {
            place = " at \(Self.coordinates(e))"
        }
        place += " (\(Self.utcMinute(e.timeSeconds)) UTC)"
        let was = before.magnitude.map { "M" + formatValue($0) } ?? "an event without magnitude"
        return Change(
            state: .resolved, at: Self.revisionTime(e), value: e.magnitude ?? before.magnitude, level: nil,
            fromLevel: PagerLevel(before.alert)?.name,
            summary: "Withdrawn: the \(magnitude)event\(place) was deleted by USGS",
            explanation: "USGS deleted the event",
            details: "event \(e.id) has status deleted (updated \(Self.utc(e.updated))); announced before as "
                + "\(was) (\(before.status), updated \(Self.utc(before.updated)))", place: e.place,
            headline: "earthquake withdrawn by USGS")
    }

    // MARK: - Wording

    /// `M6.3 earthquake 35 km SSW of Herat, Afghanistan — depth 14 km, 182 km from Kabul; PAGER
    /// orange; tsunami flag; 2023-10-07 11:41 local (UTC+04:00 approx.); https://…`
    /// `132 km from Tokyo ≤ 300 km`, and with `min_intensity` the estimate against it:
    /// `132 km from Tokyo office, estimated intensity IV (4.2) < V`.
    static func placeText(_ p: Place, _ d: Double, _ e: QuakeEvent, holds: Bool) -> String {
        var parts: [String] = []
        if p.radiusKm.isFinite {
            parts.append("\(km(d)) from \(p.name) \(d <= p.radiusKm ? "≤" : ">") \(km(p.radiusKm))")
        } else {
            parts.append("\(km(d)) from \(p.name)")
        }
        if let min = p.minIntensity {
            if let i = p.intensity(of: e) {
                let ok = i >= min - 1e-9
                parts.append(
                    "estimated intensity \(FeltIntensity.roman(i)) (\(formatValue((i * 10).rounded() / 10))) "
                        + "\(ok ? "≥" : "<") \(FeltIntensity.roman(min))")
            } else {
                parts.append("no magnitude to estimate the intensity (min \(FeltIntensity.roman(min)))")
            }
        }
        return parts.joined(separator: ", ")
    }

    func summary(_ e: QuakeEvent, _ evaluation: Evaluation) -> String {
        var s = e.magnitude.map { Self.magnitude($0) + " " } ?? "M? "
        s += e.type
        if let p = e.place, !p.isEmpty {
            s += Self.startsWithDistance(p) ? " \(p)" : ", \(p)"
        } else {
            s += " at \(Self.coordinates(e))"
        }
        var details: [String] = []
        if let d = e.depthKm { details.append("depth \(Self.km(d))") }
        if let place = evaluation.place, let distance = evaluation.distanceKm {
            if place.minIntensity != nil, let i = place.intensity(of: e) {
                // "estimated intensity V (moderate shaking) at Tokyo office, 132 km" (issue 42).
                details.append(
                    "estimated intensity \(FeltIntensity.roman(i)) (\(FeltIntensity.shaking(i)) shaking) at "
                        + "\(place.name), \(Self.km(distance))")
            } else {
                details.append("\(Self.km(distance)) from \(place.name)")
            }
        }
        if !details.isEmpty { s += " — " + details.joined(separator: ", ") }
        var parts = [s]
        if let level = PagerLevel(e.alert) { parts.append("PAGER \(level.name)") }
        if e.tsunami { parts.append("tsunami flag") }
        parts.append(Self.localTime(e))
        if let url = e.url, !url.isEmpty { parts.append(url) }
        return parts.joined(separator: "; ")
    }

    /// `2023-10-11 04:11 local (UTC+04:00 approx.)`: with the feed's `tz` when it has one, else the
    /// offset of the longitude's nautical time zone (round(longitude / 15) hours), called approximate.
    static func localTime(_ e: QuakeEvent) -> String {
        // A feed's longitude or tz out of range must not trap: offsets are pinned to ±14 h.
        let nautical = e.longitude.isFinite ? Int((max(-180, min(180, e.longitude)) / 15).rounded()) * 60 : 0
        let minutes = max(-14 * 60, min(14 * 60, e.tz ?? nautical))
        let local = utcMinute(e.timeSeconds.addingClamped(Int64(minutes) * 60))
        return "\(local) local (\(offset(minutes))\(e.tz == nil ? " approx." : ""))"
    }

    /// `UTC+04:30`, `UTC-07:00`.
    static func offset(_ minutes: Int) -> String {
        let sign = minutes < 0 ? "-" : "+"
        let m = abs(minutes)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "UTC\(sign)\(two(m / 60)):\(two(m % 60))"
    }

    /// `2023-10-11 04:11`.
    static func utcMinute(_ seconds: Int64) -> String {
        let iso = Timestamp.format(seconds)
        return String(iso.prefix(16)).replacingOccurrences(of: "T", with: " ")
    }

    /// `2023-10-11T19:57:32Z` for epoch milliseconds.
    static func utc(_ milliseconds: Int64) -> String {
        Timestamp.format(QuakeEvent.seconds(milliseconds))
    }

    /// `M6.3`, `M-0.4`: one decimal, as USGS titles write it.
    static func magnitude(_ m: Double) -> String {
        "M" + oneDecimal(m)
    }

    static func oneDecimal(_ v: Double) -> String {
        guard v.isFinite, abs(v) < 1e15 else { return "\(v)" }
        let tenths = Int64((v * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        let a = abs(tenths)
        return "\(sign)\(a / 10).\(a % 10)"
    }

    /// The old and new magnitude for an update line; with two decimals when one would show no change.
    static func magnitudePair(_ old: Double?, _ new: Double?) -> (String, String) {
        let from = old.map(magnitude) ?? "M?"
        let to = new.map(magnitude) ?? "M?"
        if from == to, let old, let new {
            return ("M" + formatValue((old * 100).rounded() / 100), "M" + formatValue((new * 100).rounded() / 100))
        }
        return (from, to)
    }

    static func magnitudeMoved(from old: Double?, to new: Double?) -> Bool {
        switch (old, new) {
        case (nil, nil): return false
        case (let a?, let b?): return abs(b - a) >= magnitudeStep - 1e-9
        default: return true
        }
    }

    /// `14 km`, `8.3 km`: whole km from 10 km on, one decimal below.
    static func km(_ v: Double) -> String {
        if abs(v) >= 10 { return "\(formatValue(v.rounded())) km" }
        return "\(formatValue((v * 10).rounded() / 10)) km"
    }

    static func coordinates(_ e: QuakeEvent) -> String {
        "\(formatValue(e.latitude)), \(formatValue(e.longitude))"
    }

    /// USGS places are `35 km SSW of Herat, Afghanistan` or a region name (`western Afghanistan`).
    static func startsWithDistance(_ place: String) -> Bool {
        place.first?.isNumber ?? false
    }
}
