import Hummingbird

extension StatusSite {
    /// `/`, `/gauges`, `/gauges/ID`, `/air`, `/air/CITY`, `/quakes`, `/stations/ID`.
    static func addReadPages(to router: Router<BasicRequestContext>, site: Context) {
    }
}
