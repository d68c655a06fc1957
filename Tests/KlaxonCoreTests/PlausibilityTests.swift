import KlaxonCore
import Testing

@Suite("suspect readings: physical ranges and source quality codes")
struct PlausibilityTests {
    func r(
        _ metric: String, _ value: Double, unit: String? = nil, source: String? = nil, quality: String? = nil
    ) -> Reading {
        Reading(station: "S", metric: metric, time: 0, value: value, unit: unit, source: source, quality: quality)
    }

    @Test("a CWMS daily flow of −8,455,545 cfs is out of range; real flows, tidal reversals included, are not")
    func dischargeRange() {
        #expect(Plausibility.isSuspect(r("discharge", -8_455_545, unit: "ft³/s", source: "cwms", quality: "0")))
        #expect(Plausibility.isSuspect(r("discharge", -8_455_545, unit: "cfs")))
        #expect(Plausibility.isSuspect(r("discharge.mean", 9_000_000, unit: "ft³/s")))
        #expect(Plausibility.isSuspect(r("discharge.res_out", -2_000_000)))
        #expect(!Plausibility.isSuspect(r("discharge", 0, unit: "ft³/s")))
        #expect(!Plausibility.isSuspect(r("discharge", 2_500_000, unit: "ft³/s")))
        #expect(!Plausibility.isSuspect(r("discharge", -45_000, unit: "ft³/s")))  // a tidal river running back
        // SI: the same bounds in m³/s.
        #expect(Plausibility.isSuspect(r("discharge", 200_000, unit: "m3/s")))
        #expect(!Plausibility.isSuspect(r("discharge", 50_000, unit: "m³/s")))
        // A unit the table does not know is not range-checked; a metric it does not know neither.
        #expect(!Plausibility.isSuspect(r("discharge", -8_455_545, unit: "acre-ft/d")))
        #expect(!Plausibility.isSuspect(r("p00095", -8_455_545, unit: "uS/cm")))
        #expect(!Plausibility.isSuspect(r("discharge_total", -8_455_545)))
    }

    @Test("heights, temperatures, precipitation, AQI and particulates have their ranges")
    func otherRanges() {
        #expect(Plausibility.isSuspect(r("gage_height", -999, unit: "ft")))
        #expect(!Plausibility.isSuspect(r("gage_height", 36.5, unit: "ft")))
        #expect(Plausibility.isSuspect(r("gage_height", 2_000, unit: "m")))
        #expect(Plausibility.isSuspect(r("water_temperature", 85, unit: "°C")))
        #expect(!Plausibility.isSuspect(r("water_temperature", 85, unit: "deg F")))
        #expect(Plausibility.isSuspect(r("precipitation", -0.5, unit: "in")))
        #expect(Plausibility.isSuspect(r("aqi", 1_200)))
        #expect(Plausibility.isSuspect(r("aqi.pm25", -3)))
        #expect(!Plausibility.isSuspect(r("aqi", 487)))
        #expect(Plausibility.isSuspect(r("pm25", 5_000, unit: "µg/m³")))
        #expect(!Plausibility.isSuspect(r("pm25", 950, unit: "μg/m³")))  // Greek mu
        #expect(!Plausibility.isSuspect(r("pm10", 5_000, unit: "ug/m3")))
        #expect(Plausibility.isSuspect(r("elevation", 45_000, unit: "ft")))
    }

    @Test("CWMS quality: screened and missing, questionable or rejected is suspect; 0 (unscreened) and okay are not")
    func cwmsQuality() {
        func q(_ code: String, source: String? = "cwms") -> Bool {
            Plausibility.isSuspect(r("elevation", 872.1, unit: "ft", source: source, quality: code))
        }
        #expect(!q("0"))
        #expect(!q("3"))  // screened, okay
        #expect(q("5"))  // screened, missing
        #expect(q("9"))  // screened, questionable
        #expect(q("17"))  // screened, rejected
        #expect(!q("16"))  // not screened: the other bits mean nothing
        #expect(q("-2147483631"))  // protected (bit 31) and screened, rejected
        #expect(q("cwms:17", source: nil))
        #expect(!q("17", source: "usgs-iv"))  // another source's code is not read as CWMS bits
        #expect(!q("bad"))
    }

    @Test("NWIS qualifiers: equipment, ice, maintenance, test, flood damage and *** are suspect; P, A, e are not")
    func nwisQualifiers() {
        func q(_ code: String) -> Bool {
            Plausibility.isSuspect(r("gage_height", 4.2, unit: "ft", source: "usgs-iv", quality: code))
        }
        #expect(!q("P"))
        #expect(!q("A:e"))
        #expect(!q("A,e"))
        #expect(!q("P:Bkw"))
        #expect(q("P:Eqp"))
        #expect(q("Ice"))
        #expect(q("A,***"))
        #expect(!q("flagged"))
    }

    @Test("the streaming check agrees with the one-off one across series and codes")
    func streamingCheck() {
        let readings = [
            r("discharge", 10, unit: "ft³/s"), r("discharge", -8_455_545, unit: "ft³/s"),
            r("gage_height", 3, unit: "ft", quality: "P"), r("gage_height", 3, unit: "ft", quality: "P:Eqp"),
            r("gage_height", 3, unit: "ft", source: "cwms", quality: "17"), r("gage_height", 3, unit: "m"),
            r("gage_height", 3_000, unit: "m"), r("gage_height", 3_000, unit: "ft"),
        ]
        var check = Plausibility.SuspectCheck()
        #expect(readings.map { check.isSuspect($0) } == readings.map(Plausibility.isSuspect))
        #expect(readings.map(Plausibility.isSuspect) == [false, true, false, true, true, false, true, false])
    }

    @Test func unitKeys() {
        #expect(Plausibility.unitKey("ft³/s") == "ft3/s")
        #expect(Plausibility.unitKey("ft^3/s") == "ft3/s")
        #expect(Plausibility.unitKey("deg C") == "c")
        #expect(Plausibility.unitKey("°F") == "f")
        #expect(Plausibility.unitKey("µg/m³") == "ug/m3")
        #expect(Plausibility.unitKey(nil) == "")
    }
}
