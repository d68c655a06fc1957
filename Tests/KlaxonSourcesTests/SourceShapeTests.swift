import KlaxonCore
import KlaxonSources
import Testing

/// A source declares how it is run (`SourceShape`) and the few things the app asks of it outside a
/// fetch; the app switches over the shape and reads these instead of asking a source its type.
@Suite struct SourceShapeTests {
    func shape(_ source: any Source) -> String {
        switch source.shape {
        case .polled: "polled"
        case .streaming(let s): "streaming \(s.name)"
        case .perPlace(let p): "per place \(p.name)"
        }
    }

    @Test("each kind declares its shape: the WebSocket feed streams, weather sources go per place, the rest poll")
    func shapes() {
        #expect(shape(AQIWebSocketSource(name: "ws", url: "ws://x")) == "streaming ws")
        #expect(shape(OpenMeteoSource(name: "om")) == "per place om")
        #expect(shape(OWMSource(name: "owm", apiKey: "k")) == "per place owm")
        #expect(shape(NWSAlertsSource(name: "alerts")) == "per place alerts")
        #expect(shape(USGSIVSource(name: "iv", sites: ["1"])) == "polled")
        #expect(shape(NWPSSource(name: "nwps", gauges: ["X"])) == "polled")
        #expect(shape(USGSQuakesSource(name: "q", mode: .feed("all_hour"))) == "polled")
        #expect(USGSIVSource(name: "iv", sites: ["1"]).streaming == nil)
        // A stream's listening time can be bounded through the shape (`klaxon fetch --timeout`).
        var ws = AQIWebSocketSource(name: "ws", url: "ws://x", sampleEvery: 45, maxFrame: 1000, listen: 60).streaming!
        ws.listen = 5
        #expect(ws.listen == 5 && ws.sampleEvery == 45 && ws.maxFrame == 1000)
    }

    @Test("lookups outside a fetch: each kind answers its own at its configured address, others nil")
    func lookups() {
        let sources: [any Source] = [
            NWPSSource(name: "nwps", baseURL: "http://nwps/", gauges: ["X"]),
            USGSIVSource(name: "iv", baseURL: "http://iv/", sites: ["1"]),
            OpenMeteoSource(name: "om", geocodingURL: "http://geo/"),
            AQIWebSocketSource(name: "ws", url: "ws://x"),
        ]
        #expect(sources.compactMap { $0.lookupURL(.gaugeMetadata) } == ["http://nwps/"])
        #expect(sources.compactMap { $0.lookupURL(.instantaneousValues) } == ["http://iv/"])
        #expect(sources.compactMap { $0.lookupURL(.geocoding) } == ["http://geo/"])
    }

    @Test("units of observations and the names of configured series come from the kinds that have them")
    func configuredReads() {
        #expect(NWSObservationsSource(name: "nws", stations: ["KDEN"], units: .us).observationUnits == .us)
        #expect(USGSIVSource(name: "iv", sites: ["1"]).observationUnits == nil)
        let cwms = CWMSSource(
            name: "corps", office: "SWT",
            timeseries: [
                .init(name: "KEYS.Elev.Inst.1Hour.0.Best", metric: "pool"), .init(name: "KEYS.Flow.Inst.1Hour.0.Best"),
            ])
        let named = cwms.seriesMetrics
        #expect(named.first?.id == "KEYS.Elev.Inst.1Hour.0.Best" && named.first?.metric == "pool")
        #expect(named.map(\.id) == cwms.timeseries.map(\.name).filter { cwms.metrics[$0] != nil })
        #expect(USGSIVSource(name: "iv", sites: ["1"]).seriesMetrics.isEmpty)
    }
}
