import Foundation
import KlaxonCore

/// `klaxon test --junit FILE`: the results as JUnit XML in the shape `promtool test rules --junit`
/// writes (Prometheus' `util/junitxml`): `<testsuites>`, one `<testsuite>` per test file with `name`,
/// `tests`, `failures`, `errors`, `skipped`, `time` and `timestamp`, one `<testcase name=…>` per case
/// and a `<failure>` holding why it failed. Hand-written (a few elements; Foundation's XMLDocument is
/// not on Linux everywhere), so escaping is done here: `&`, `<`, `>`, quotes, and characters XML 1.0
/// cannot hold at all (most controls, lone surrogates) become U+FFFD, as Go's encoder does.
public enum JUnitReport {
    public static func xml(_ outcome: RuleTests.Outcome, timestamp: Date = Date()) -> String {
        var files: [String] = []
        var byFile: [String: [RuleTests.CaseResult]] = [:]
        for c in outcome.cases {
            if byFile[c.file] == nil { files.append(c.file) }
            byFile[c.file, default: []].append(c)
        }
        let stamp = ISO8601DateFormatter().string(from: timestamp)
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
        for file in files {
            let cases = byFile[file] ?? []
            let failures = cases.filter { $0.failure != nil }.count
            let time = cases.reduce(0) { $0 + $1.seconds }
            out += "\t<testsuite name=\"\(escape(file, attribute: true))\" tests=\"\(cases.count)\" "
            out += "failures=\"\(failures)\" errors=\"0\" skipped=\"0\" "
            out += "time=\"\(String(format: "%.3f", time))\" timestamp=\"\(stamp)\">\n"
            for c in cases {
                out += "\t\t<testcase name=\"\(escape(c.name, attribute: true))\""
                if let failure = c.failure {
                    out += ">\n\t\t\t<failure>\(escape(failure, attribute: false))</failure>\n\t\t</testcase>\n"
                } else {
                    out += "></testcase>\n"
                }
            }
            out += "\t</testsuite>\n"
        }
        return out + "</testsuites>\n"
    }

    /// Text escaped for XML character data or an attribute value (where line breaks and tabs become
    /// character references, so they survive attribute-value normalization): `Escape.xmlText`,
    /// `Escape.xmlAttribute`.
    public static func escape(_ text: String, attribute: Bool) -> String {
        attribute ? Escape.xmlAttribute(text) : Escape.xmlText(text)
    }
}
