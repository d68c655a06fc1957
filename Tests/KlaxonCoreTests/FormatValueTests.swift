import Foundation
import KlaxonCore
import Testing

/// `formatValue` writes thousandths directly; it must read exactly as the general form did.
@Suite struct FormatValueTests {
    /// The general form: `String(Double)` of the value rounded to thousandths, trailing zeros trimmed.
    static func reference(_ v: Double) -> String {
        if v.isNaN || v.isInfinite { return "\(v)" }
        let rounded = (v * 1000).rounded() / 1000
        if rounded == rounded.rounded(), abs(rounded) < 1e15 { return String(Int64(rounded)) }
        var s = String(rounded)
        if s.contains("e") { return s }
        while s.hasSuffix("0") { s.removeLast() }
        return s
    }

    @Test func matchesTheGeneralForm() {
        var values: [Double] = [
            0, -0.0, 0.001, -0.001, 0.0004, 0.0005, 0.05, 0.1, 0.5, 1.25, -1.25, 10.47, 12.345, 12.3456, 99.9995,
            1e-7, 123_456_789.123, 99_999_999_999.999, 1e11 + 0.5, 1e12 + 0.25, 1e14 - 0.5, 1e15 + 0.5, 1e17, -1e17,
            .nan, .infinity, -.infinity, .greatestFiniteMagnitude, .leastNonzeroMagnitude,
        ]
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let magnitude = Double.random(in: -6...15, using: &rng)
            let sign: Double = Bool.random(using: &rng) ? 1 : -1
            values.append(sign * pow(10, magnitude) * Double.random(in: 1..<10, using: &rng))
            values.append(Double(Int.random(in: -100_000...100_000, using: &rng)) / 1000)
        }
        for v in values {
            #expect(formatValue(v) == Self.reference(v), "\(v)")
        }
    }
}
