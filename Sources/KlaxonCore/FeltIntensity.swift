import Foundation

/// How strongly an earthquake is likely felt at a place: the Modified Mercalli Intensity (MMI)
/// estimated with the intensity prediction equation of Atkinson & Wald (2007), "'Did You Feel It?'
/// intensity data: a surprisingly good measure of earthquake ground motion", Seismological Research
/// Letters 78(3), 362–368, equation 1 and its two coefficient sets (Table 1: California, and central
/// and eastern US):
///
///     MMI = c1 + c2(M − 6) + c3(M − 6)² + c4·log R + c5·R + c6·B + c7·M·log R
///     R = √(D² + h²),   B = max(0, log(R / Rt))
///
/// with log base 10, M the moment magnitude and D in km the distance to the rupture, which for a
/// point source (all a feed gives) is the hypocentral distance: √(epicentral² + depth²). The
/// coefficients, as published (and as the USGS ShakeMap and OpenQuake implementations carry them):
///
/// | set        | c1    | c2    | c3     | c4    | c5         | c6   | c7     | h  | Rt |
/// |------------|-------|-------|--------|-------|------------|------|--------|----|----|
/// | California | 12.27 | 2.270 | 0.1304 | −1.30 | −0.0007070 | 1.95 | −0.577 | 14 | 30 |
/// | CEUS       | 11.72 | 2.36  | 0.1155 | −0.44 | −0.002044  | 2.31 | −0.479 | 17 | 80 |
///
/// The estimate is clipped to I–XII (the scale has nothing outside). Its standard deviation is about
/// 0.4 intensity units (the paper's): "estimated", never "measured", in every message.
///
/// The region: the central and eastern US set (stable continental crust, where shaking carries
/// far) for places in North America east of 105° W (`Region.forPlace`); the California set (active
/// crust) everywhere else. The paper fit California; elsewhere in active crust (Japan, Chile,
/// Turkey) the California set is the usual stand-in and is an approximation, as the docs say.
public enum FeltIntensity {
    public enum Region: String, Sendable, CaseIterable, Codable {
        case california
        case ceus

        /// The coefficient set for a place: CEUS in North America east of 105° W (latitude 24–62°N,
        /// longitude 105°W–52°W), California elsewhere.
        public static func forPlace(latitude: Double, longitude: Double) -> Region {
            (24...62).contains(latitude) && (-105 ... -52).contains(longitude) ? .ceus : .california
        }
    }

    struct Coefficients {
        let c1, c2, c3, c4, c5, c6, c7, h, rt: Double
    }

    static func coefficients(_ region: Region) -> Coefficients {
        switch region {
        case .california:
            return Coefficients(
                c1: 12.27, c2: 2.270, c3: 0.1304, c4: -1.30, c5: -0.0007070, c6: 1.95, c7: -0.577, h: 14, rt: 30)
        case .ceus:
            return Coefficients(
                c1: 11.72, c2: 2.36, c3: 0.1155, c4: -0.44, c5: -0.002044, c6: 2.31, c7: -0.479, h: 17, rt: 80)
        }
    }

    /// The hypocentral distance in km from the epicentral distance and the depth (a missing depth
    /// counts as 0: the surface, the nearest the event can be, so the estimate errs towards felt).
    public static func hypocentralKm(epicentralKm: Double, depthKm: Double?) -> Double {
        let d = max(0, depthKm ?? 0)
        return (epicentralKm * epicentralKm + d * d).squareRoot()
    }

    /// The estimated MMI (not rounded, clipped to 1…12) of magnitude `m` at hypocentral distance `km`;
    /// nil when either is not a finite number or the distance is negative.
    public static func aw2007(magnitude m: Double, hypocentralKm km: Double, region: Region) -> Double? {
        guard m.isFinite, km.isFinite, km >= 0 else { return nil }
        let k = coefficients(region)
        let r = (km * km + k.h * k.h).squareRoot()
        let logR = log10(r)
        let b = max(0, log10(r / k.rt))
        let mmi =
            k.c1 + k.c2 * (m - 6) + k.c3 * (m - 6) * (m - 6) + k.c4 * logR + k.c5 * r + k.c6 * b + k.c7 * m * logR
        return min(12, max(1, mmi))
    }

    /// The Roman numeral of an intensity rounded to the nearest whole (4.5 → V), I to XII.
    public static func roman(_ mmi: Double) -> String {
        let numerals = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"]
        guard mmi.isFinite else { return "I" }
        let n = Int(min(12, max(1, mmi.rounded(.toNearestOrAwayFromZero))))
        return numerals[n - 1]
    }

    /// An intensity given as a Roman numeral (`IV`, any case) or a number (`4`, `4.5`); nil otherwise.
    public static func parse(_ text: String) -> Double? {
        let t = text.trimmingCharacters(in: .whitespaces)
        if let v = Double(t), v.isFinite, (1...12).contains(v) { return v }
        let numerals = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"]
        return numerals.firstIndex(of: t.uppercased()).map { Double($0 + 1) }
    }

    /// The USGS words for the shaking of an intensity (rounded): not felt (I), weak (II–III), light (IV),
    /// moderate (V), strong (VI), very strong (VII), severe (VIII), violent (IX), extreme (X and above).
    public static func shaking(_ mmi: Double) -> String {
        let n = Int(min(12, max(1, mmi.isFinite ? mmi.rounded(.toNearestOrAwayFromZero) : 1)))
        switch n {
        case 1: return "not felt"
        case 2, 3: return "weak"
        case 4: return "light"
        case 5: return "moderate"
        case 6: return "strong"
        case 7: return "very strong"
        case 8: return "severe"
        case 9: return "violent"
        default: return "extreme"
        }
    }
}
