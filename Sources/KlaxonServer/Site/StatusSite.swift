import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import Plot

/// The status site: server-rendered HTML pages with inline SVG charts, on the daemon's listener.
///
/// No JavaScript and nothing from another host: every page is one self-contained document with inline
/// CSS, refreshed politely by a `Refresh` header (off with `?refresh=off`). Read pages are open to
/// whoever can reach the listener (as `/metrics` is); trips need the owner's sign-in; actions (ack,
/// silences) need the team token and a CSRF token.
///
/// The routes are added in groups, each in its own file:
/// - `addReadPages` (`Site+ReadPages.swift`): `/`, `/gauges`, `/gauges/ID`, `/air`, `/air/CITY`,
///   `/quakes`, `/stations/ID`, and their charts as PNG (`…/chart.png`, `ChartImages`).
/// - `addOwnerPages` (`Site+Owner.swift`): sign-in and out, `/trips`, `/trips/NAME`.
/// - `addActions` (`Site+Actions.swift`): ack an alert, add or expire a silence.
public enum StatusSite {
    public struct Settings: Sendable {
        /// Serve the site at all (`site.enabled`, default on).
        public var enabled: Bool
        /// The team token (`api.token`): signs a team member in for acks and silences.
        public var teamToken: String?
        /// Owner → token (`api.owners`): signs an owner in to see their trips.
        public var ownerTokens: [String: String]
        /// The key that signs session cookies and CSRF tokens. Random per process unless configured,
        /// so a restart signs everybody out.
        public var secret: [UInt8]
        /// Where times are shown when a station has no zone of its own.
        public var timeZone: TimeZone
        /// Seconds between refreshes (the `Refresh` header); `?refresh=off` turns it off.
        public var refreshSeconds: Int
        /// The places quake rules watch (`near:`): `/quakes` gives each event's distance to the nearest.
        public var places: [Place]
        /// The AQI scale of `/air` (the one the rules use; US EPA unless a rule names another).
        public var aqiScale: AQIScale
        /// A station's own scale where a rule names one for it.
        public var aqiScales: [String: AQIScale]
        /// The `Host` names the site answers (`site.hosts` and the listener; see `SiteHosts`).
        public var hosts: SiteHosts = .loopback
        /// The daemon's rule names: a silence for another rule is added with a warning. Nil: not
        /// known, not checked.
        public var ruleNames: Set<String>? = nil
        /// The stations rules list (`stations:`), known besides those in the store.
        public var ruleStations: Set<String> = []
        /// Sessions signed out before they expired (in memory, per process).
        let revocations = SessionRevocations()
        /// The charts as PNG, kept in memory (per process; copies of these settings share it, so
        /// the site and the daemon's `ChartImages` draw each picture once).
        var charts = ChartCache()

        public init(
            enabled: Bool = true, teamToken: String? = nil, ownerTokens: [String: String] = [:],
            secret: [UInt8]? = nil, timeZone: TimeZone = .current, refreshSeconds: Int = 60,
            places: [Place] = [], aqiScale: AQIScale = .usEPA, aqiScales: [String: AQIScale] = [:]
        ) {
            self.places = places
            self.aqiScale = aqiScale
            self.aqiScales = aqiScales
            self.enabled = enabled
            self.teamToken = teamToken
            self.ownerTokens = ownerTokens
            self.secret = secret ?? Self.randomSecret()
            self.timeZone = timeZone
            self.refreshSeconds = refreshSeconds
        }

        static func randomSecret() -> [UInt8] {
            var g = SystemRandomNumberGenerator()
            return (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }
        }
    }

    /// A watched place (a quake rule's `near:` entry).
    public struct Place: Sendable, Hashable {
        public var name: String
        public var latitude: Double
        public var longitude: Double

        public init(name: String, latitude: Double, longitude: Double) {
            self.name = name
            self.latitude = latitude
            self.longitude = longitude
        }
    }

    /// What every page builder gets: the store, the settings and the clock (seconds since 1970).
    struct Context: Sendable {
        var store: any SiteStore
        var settings: Settings
        var now: @Sendable () -> Int64
    }

    static func add(
        to router: Router<BasicRequestContext>, store: any SiteStore, settings: Settings,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        guard settings.enabled else { return }
        let site = Context(store: store, settings: settings, now: now)
        // Every site route checks `Host` first (DNS rebinding); the API and chat have their own auth.
        let routes = router.group().add(middleware: SiteHostCheck(hosts: settings.hosts))
        addReadPages(to: routes, site: site)
        addOwnerPages(to: routes, site: site)
        addActions(to: routes, site: site)
    }
}
