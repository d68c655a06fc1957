import KlaxonCore
import Testing

/// Issue 43: `… dm` at the end of a watch asks for direct messages; the rest parses as before.
@Suite struct WatchDirectCommandTests {
    func command(_ text: String) -> WatchCommand? {
        if case .success(let c)? = WatchCommand.parse(text, catalog: WatchCommandTests.catalog) { return c }
        return nil
    }

    @Test("a trailing dm (any case) is a direct watch of every kind; without it, the channel's")
    func dm() {
        let potomac = WatchTarget.gauge(
            station: "01646500", name: "Potomac River at Little Falls", level: .category("minor"))
        #expect(command("watch gauge 01646500 minor dm") == .watch(potomac, direct: true))
        #expect(command("watch gauge 01646500 minor DM") == .watch(potomac, direct: true))
        #expect(command("watch gauge 01646500 minor") == .watch(potomac))
        #expect(command("watch gauge 01646500 minor") == .watch(potomac, direct: false))
        #expect(
            command("watch air \"New Delhi\" very poor nowcast dm")
                == .watch(
                    .air(
                        place: "New Delhi", stations: ["IN-ND-1"], scale: "india-naqi", level: "Very Poor",
                        series: .nowcast), direct: true))
        #expect(
            command(#"watch quakes near "Tokyo office" M5 dm"#)
                == .watch(.quakes(place: WatchCommandTests.tokyo, threshold: .magnitude(5)), direct: true))
        // `dm` alone, or twice: not a watch.
        #expect(command("watch dm") == nil)
        #expect(command("watch gauge 01646500 minor dm dm") == nil)
        #expect(command("watching dm") == nil)
    }
}
