import Foundation

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
    /// character references, so they survive attribute-value normalization).
    public static func escape(_ text: String, attribute: Bool) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&#34;"
            case "'": out += "&#39;"
            case "\n" where attribute: out += "&#xA;"
            case "\r": out += "&#xD;"
            case "\t" where attribute: out += "&#x9;"
            default:
                out.unicodeScalars.append(allowed(scalar) ? scalar : "\u{FFFD}")
            }
        }
        return out
    }

    /// XML 1.0's Char production.
    static func allowed(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x9, 0xA, 0xD: true
        case 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: true
        default: false
        }
    }
}
