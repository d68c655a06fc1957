import KlaxonStore

// What the HTTP server reads and does, as compositions of the store's roles (`Store.swift`). They
// are declared here, by their consumer, and made of `KlaxonStore`'s roles only: a backend never
// imports the server. Each route group takes the narrowest of them, so a test of a page or an
// endpoint needs only what that page reads (an in-memory store, or a fake of a few methods), and the
// composition root (`Daemon`, the commands) passes the whole store (`Store`) to each.

/// What the status site's pages (and its chart images) query: series, stations and gauges, the
/// sources' states, alerts and episodes, the notification history, quakes, trips and their weather,
/// river forecast issuances (a gauge's page).
/// Reads, though a role is taken whole (`TripStore` also saves and removes trips).
public typealias SiteReads =
    SeriesReads & StationReads & SourceStates & AlertReads & QuakeStore & TripStore & WeatherStore
    & AirForecastStore & NotificationHistory & ForecastReads

/// The status site: its pages' reads and what its forms do (ack, silence: `AlertActions`).
public typealias SiteStore = SiteReads & AlertActions

/// The API (`/api/v1`): alerts and silences, acks, the notification history, trips and their weather.
public typealias APIStore =
    AlertReads & AlertActions & TripStore & WeatherStore & AirForecastStore & NotificationHistory & WatchStore

/// The Alertmanager v2 API: firing alerts, and silences made, replaced and expired.
public typealias AlertmanagerStore = AlertReads & AlertActions

/// The health probe (`/readyz`, `/metrics`, the write probe): the store answers, its file is the one
/// opened, and how each source fares.
public typealias HealthReads = StoreProbe & SourceStates

/// Everything the HTTP server serves, route group by route group: the site and the APIs, pushed
/// readings (`ReadingIngest`), chat's replay guard and the health probe.
public typealias ServerStore = SiteStore & ReadingIngest & ReplayGuard & HealthReads & WatchStore
