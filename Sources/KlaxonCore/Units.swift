/// Units Klaxon can convert between, by what they measure. Units are compared by
/// `Plausibility.unitKey` (`°C`, `deg C` and `C` are one unit; `ft³/s` and `ft3/s` too).
public enum Units {
    /// What a unit measures: only units of one dimension convert into each other.
    public enum Dimension: String, Sendable {
        case temperature, length, speed, pressure, flow, fraction
    }

    /// A unit as `base = value × scale + offset` in its dimension's base unit (°C, m, m/s, Pa, m³/s, %).
    struct Definition {
        var dimension: Dimension
        var scale: Double
        var offset: Double = 0
    }

    /// By unit key. Only exact, well-defined units: a label Klaxon cannot be sure of is never converted.
    static let table: [String: Definition] = {
        var t: [String: Definition] = [:]
        func add(_ keys: [String], _ d: Dimension, _ scale: Double, _ offset: Double = 0) {
            for k in keys { t[k] = Definition(dimension: d, scale: scale, offset: offset) }
        }
        add(["c", "celsius", "cel"], .temperature, 1)
        add(["f", "fahrenheit"], .temperature, 5.0 / 9.0, -32.0 * 5.0 / 9.0)
        add(["k", "kelvin"], .temperature, 1, -273.15)
        add(["m", "meter", "meters", "metre", "metres"], .length, 1)
        add(["km"], .length, 1_000)
        add(["cm"], .length, 0.01)
        add(["mm"], .length, 0.001)
        add(["mi", "mile", "miles"], .length, 1_609.344)
        add(["ft", "feet"], .length, 0.3048)
        add(["in", "inch", "inches"], .length, 0.0254)
        add(["m/s", "ms-1", "m_s-1"], .speed, 1)
        add(["km/h", "kmh", "kph", "km_h-1"], .speed, 1 / 3.6)
        add(["mph", "mi/h"], .speed, 0.447_04)
        add(["kn", "kt", "kts", "knots"], .speed, 1_852.0 / 3_600.0)
        add(["pa"], .pressure, 1)
        add(["hpa", "mb", "mbar"], .pressure, 100)
        add(["kpa"], .pressure, 1_000)
        add(["inhg"], .pressure, 3_386.389)
        add(["mmhg"], .pressure, 133.322_387_415)
        add(["m3/s", "cms"], .flow, 1)
        add(["ft3/s", "cfs"], .flow, 0.028_316_846_592)
        add(["%", "percent"], .fraction, 1)
        return t
    }()

    /// The dimension of a unit, or nil when Klaxon does not know the unit.
    public static func dimension(of unit: String) -> Dimension? { table[Plausibility.unitKey(unit)]?.dimension }

    /// `value × scale + offset` turns a value in one unit into another.
    public struct Conversion: Sendable, Equatable {
        public var scale: Double
        public var offset: Double

        public init(scale: Double, offset: Double) {
            self.scale = scale
            self.offset = offset
        }

        /// The value in the target unit, to 9 significant digits (a round trip °C → °F → °C gives
        /// back the number it started from, not 3.2000000000000006); nil when it is not finite.
        public func apply(_ value: Double) -> Double? {
            let v = value * scale + offset
            guard v.isFinite else { return nil }
            guard v != 0 else { return 0 }
            let digits = 9 - Int((abs(v)).log10Floor) - 1
            guard digits > 0 && digits < 300 else { return v }
            let p = pow10(digits)
            let rounded = (v * p).rounded() / p
            return rounded.isFinite ? rounded : v
        }
    }

    /// How to convert from one unit to another: nil when they measure different things or either is
    /// unknown; scale 1 and offset 0 when they are the same unit written differently.
    public static func conversion(from: String, to: String) -> Conversion? {
        let a = Plausibility.unitKey(from)
        let b = Plausibility.unitKey(to)
        if a == b { return Conversion(scale: 1, offset: 0) }
        guard let f = table[a], let t = table[b], f.dimension == t.dimension else { return nil }
        // value → base: v × f.scale + f.offset; base → target: (base − t.offset) / t.scale.
        return Conversion(scale: f.scale / t.scale, offset: (f.offset - t.offset) / t.scale)
    }

    static func pow10(_ n: Int) -> Double {
        var p = 1.0
        for _ in 0..<n { p *= 10 }
        return p
    }
}

extension Double {
    /// ⌊log10(|self|)⌋ for a finite non-zero value, without Foundation.
    fileprivate var log10Floor: Double {
        var v = abs(self)
        var e = 0.0
        while v >= 10 {
            v /= 10
            e += 1
        }
        while v < 1 {
            v *= 10
            e -= 1
        }
        return e
    }
}

/// One unit per series: a number is never stored under another unit's label. A batch's reading in
/// a unit other than its series' is converted to the series' unit when `Units` knows how, and
/// refused otherwise. A series without a unit takes the first unit a reading brings; a reading
/// without a unit is taken to be in its series' unit (CSV rows need not repeat it).
///
/// Both stores apply this, once per batch, with the units their series table holds.
public struct SeriesUnitRule: Sendable {
    /// Readings of one series in one unit that were not stored, and why.
    public struct Refusal: Sendable, Equatable, CustomStringConvertible {
        public var series: SeriesKey
        public var unit: String
        public var storedUnit: String
        public var count: Int
        public var description: String {
            "\(ReadingsParser.shown(series.station))/\(ReadingsParser.shown(series.metric)): \(count) "
                + "reading\(count == 1 ? "" : "s") in \(ReadingsParser.shown(unit)) not stored: the series is "
                + "stored in \(ReadingsParser.shown(storedUnit)) and \(ReadingsParser.shown(unit)) cannot be "
                + "converted to it (a series keeps one unit)"
        }
    }

    /// Readings converted to their series' unit, by series and unit.
    public struct Converted: Sendable, Equatable, CustomStringConvertible {
        public var series: SeriesKey
        public var from: String
        public var to: String
        public var count: Int
        public var description: String {
            "\(ReadingsParser.shown(series.station))/\(ReadingsParser.shown(series.metric)): \(count) "
                + "reading\(count == 1 ? "" : "s") in \(ReadingsParser.shown(from)) converted to the series' unit "
                + ReadingsParser.shown(to)
        }
    }

    /// What `apply` did to a batch.
    public struct Outcome: Sendable {
        /// Indices of readings not to store (nil: none), in the batch given.
        public var refusedIndices: [Bool]?
        public var refused: [Refusal] = []
        public var converted: [Converted] = []
        /// Series that had no unit and take one from this batch: the store records it.
        public var adopted: [SeriesKey: String] = [:]
        public var refusedCount: Int { refused.reduce(0) { $0 + $1.count } }

        public init() {}
    }

    /// The series of `batch` whose unit matters: those with a reading that names a unit. A store
    /// looks up only their units.
    public static func seriesWithUnits(_ batch: [Reading]) -> Set<SeriesKey> {
        var out: Set<SeriesKey> = []
        var last: SeriesKey? = nil
        for r in batch where r.unit != nil {
            if let l = last, l.station == r.station, l.metric == r.metric { continue }
            let key = r.series
            out.insert(key)
            last = key
        }
        return out
    }

    /// Converts `batch`'s readings to their series' units in place (value and unit label) and says
    /// which cannot be stored. `stored`: the unit each series has now (a series missing, or nil,
    /// has none).
    public static func apply(_ batch: inout [Reading], stored: [SeriesKey: String]) -> Outcome {
        var out = Outcome()
        guard !stored.isEmpty || batch.contains(where: { $0.unit != nil }) else { return out }
        var units = stored
        // The verdict for the last (series, unit) pair: a batch is mostly runs of one series.
        var lastKey: SeriesKey? = nil
        var lastUnit: String? = nil
        var lastVerdict: Verdict = .keep
        var refusedAt: [SeriesKey: [String: Int]] = [:]
        var convertedAt: [SeriesKey: [String: Int]] = [:]
        var flags: [Bool]? = nil
        for i in batch.indices {
            guard let unit = batch[i].unit else { continue }
            let verdict: Verdict
            if let k = lastKey, k.station == batch[i].station, k.metric == batch[i].metric, lastUnit == unit {
                verdict = lastVerdict
            } else {
                let key = batch[i].series
                if let have = units[key] {
                    if have == unit {
                        verdict = .keep
                    } else if let c = Units.conversion(from: unit, to: have) {
                        verdict = .convert(c, to: have)
                    } else {
                        verdict = .refuse(storedUnit: have)
                    }
                } else {
                    units[key] = unit
                    out.adopted[key] = unit
                    verdict = .keep
                }
                lastKey = key
                lastUnit = unit
                lastVerdict = verdict
            }
            switch verdict {
            case .keep:
                continue
            case .convert(let c, let to):
                if c.scale == 1 && c.offset == 0 {
                    batch[i].unit = to  // the same unit written differently: relabelled, not converted
                    continue
                }
                if let v = c.apply(batch[i].value) {
                    batch[i].value = v
                    batch[i].unit = to
                    convertedAt[batch[i].series, default: [:]][unit, default: 0] += 1
                    continue
                }
                // A conversion that overflows is no value: refused like an unknown unit.
                if flags == nil { flags = [Bool](repeating: false, count: batch.count) }
                flags![i] = true
                refusedAt[batch[i].series, default: [:]][unit, default: 0] += 1
            case .refuse:
                if flags == nil { flags = [Bool](repeating: false, count: batch.count) }
                flags![i] = true
                refusedAt[batch[i].series, default: [:]][unit, default: 0] += 1
            }
        }
        out.refusedIndices = flags
        for key in refusedAt.keys.sorted() {
            for (unit, n) in refusedAt[key]!.sorted(by: { $0.key < $1.key }) {
                out.refused.append(Refusal(series: key, unit: unit, storedUnit: units[key] ?? "", count: n))
            }
        }
        for key in convertedAt.keys.sorted() {
            for (unit, n) in convertedAt[key]!.sorted(by: { $0.key < $1.key }) {
                out.converted.append(Converted(series: key, from: unit, to: units[key] ?? "", count: n))
            }
        }
        return out
    }

    enum Verdict {
        case keep
        case convert(Units.Conversion, to: String)
        case refuse(storedUnit: String)
    }
}
