import Hummingbird

extension StatusSite {
    /// `/`, `/gauges`, `/gauges/ID`, `/air`, `/air/CITY`, `/quakes`, `/stations/ID`, `/alerts/ID`,
    /// `/notifications`, and
    /// the charts as PNG: `/gauges/ID/chart.png`, `/air/CITY/chart.png`, `/stations/ID/chart.png`.
    static func addReadPages(to router: RouterGroup<BasicRequestContext>, site: Context) {
        router.get("/") { request, _ in
            try await site.respond(request) { try await OverviewPage.page(request: request, site: site) }
        }
        router.get("/gauges") { request, _ in
            try await site.respond(request) { try await GaugePages.list(request: request, site: site) }
        }
        router.get("/gauges/:id") { request, context in
            try await site.respond(request) {
                try await GaugePages.page(request: request, context: context, site: site)
            }
        }
        router.get("/air") { request, _ in
            try await site.respond(request) { try await AirPages.list(request: request, site: site) }
        }
        router.get("/air/:city") { request, context in
            try await site.respond(request) { try await AirPages.page(request: request, context: context, site: site) }
        }
        router.get("/quakes") { request, _ in
            try await site.respond(request) { try await QuakesPage.page(request: request, site: site) }
        }
        router.get("/alerts/:id") { request, context in
            try await site.respond(request) {
                try await EpisodePage.page(request: request, context: context, site: site)
            }
        }
        router.get("/notifications") { request, _ in
            try await site.respond(request) { try await NotificationsPage.page(request: request, site: site) }
        }
        router.get("/stations/:id") { request, context in
            try await site.respond(request) {
                try await StationPage.page(request: request, context: context, site: site)
            }
        }
        // The pages' charts as PNG (`ChartImages`): public like the pages, bytes instead of HTML.
        router.get("/gauges/:id/chart.png") { request, context in
            try await site.respondChart(request, context: context, kind: .gauge)
        }
        router.get("/air/:city/chart.png") { request, context in
            try await site.respondChart(request, context: context, kind: .air)
        }
        router.get("/stations/:id/chart.png") { request, context in
            try await site.respondChart(request, context: context, kind: .station)
        }
    }
}
