import Foundation
import KlaxonCore
import KlaxonTesting
import Testing

/// `dry-run --render` prints what the daemon would send (issue 39, item 9): the same readings go
/// through the daemon's path (`ingest`, `evaluate` at each reading's time, `dispatch` to a real
/// webhook sink and a real SMTP server) and through `dry-run --render`, and the payloads agree field
/// by field: the alert's id, `startsAt`, status, fingerprint and level; an email's subject,
/// `Message-ID` of the thread's first message, `In-Reply-To` and `References` (which only ever name a
/// message rendered before them). Delivery-only headers (`X-Klaxon-Key`, `Date`) are left out.
@Suite(.serialized) struct DryRunRenderTests {
    /// Minor, then moderate, then back below: one episode of three transitions. Recent times, so
    /// the daemon's dispatch (on the real clock) finds nothing late.
    static func readings(now: Int64) -> [(time: Int64, value: Double)] {
        [(now - 45 * 60, 12), (now - 30 * 60, 16), (now - 15 * 60, 8)]
    }

    @Test("the daemon's payloads and dry-run --render's agree: ids, startsAt, subject, threading")
    func renderedAsTheDaemonSends() async throws {
        try await HTTPSink.with { sink in
            try await SMTPServer.with { smtp in try await compare(sink: sink, smtp: smtp) }
        }
    }

    func compare(sink: HTTPSink, smtp: SMTPServer) async throws {
        let s = try Scratch()
        try s.write(
            "rules/stage.yaml",
            """
            name: stage
            kind: levels
            metric: gage_height
            levels: [{name: minor, at: 10}, {name: moderate, at: 15}]
            notify: [hook, mail]
            """)
        let config = try s.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            rules: rules
            receivers:
              - {name: hook, type: webhook, preset: generic, url: "\(sink.url)/hook"}
              - {name: mail, type: email, smtp_url: "\(smtp.url)", starttls: off, from: klaxon@example.org, to: [ops@example.org]}
            """)
        let now = Int64(Date().timeIntervalSince1970) / 60 * 60
        let readings = Self.readings(now: now)
        var all = "station,metric,time,value\n"
        // The daemon's path, one evaluation and one dispatch per reading, as the daemon runs them.
        for (i, r) in readings.enumerated() {
            let line = "G1,gage_height,\(Timestamp.format(r.time)),\(r.value)\n"
            all += line
            try s.write("r\(i).csv", "station,metric,time,value\n" + line)
            let ingest = await InProcess.ingest(config: config, s.path("r\(i).csv"))
            #expect(ingest.status == 0, "\(ingest.stderr)")
            let eval = await InProcess.evaluate(config: config, now: Timestamp.format(r.time))
            #expect(eval.status == 0, "\(eval.stderr)")
            let dispatch = try await klaxonAsync(["dispatch", "--config", config, "--until-empty"])
            #expect(dispatch.status == 0, "\(dispatch.stderr)")
        }
        try s.write("all.csv", all)
        let hooks = await sink.requests().compactMap(\.json)
        let mails = smtp.messages()
        try #require(hooks.count == 3 && mails.count == 3, "\(hooks.count) webhooks, \(mails.count) emails")

        // dry-run --render, for each receiver.
        let hookRun = await InProcess.dryRun(readings: [s.path("all.csv")], render: "hook", config: config)
        #expect(hookRun.status == 0, "\(hookRun.stderr)")
        let rendered = Self.payloads(hookRun.stdout).compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.joined(separator: "\n").utf8)) as? [String: Any]
        }
        #expect(rendered.count == hooks.count, "\(hookRun.stdout)")
        for (sent, shown) in zip(hooks, rendered) {
            #expect(Self.fields(sent) == Self.fields(shown))
        }
        // One episode: one alert id and one startsAt (the episode's start, not each transition's).
        #expect(Set(rendered.map { Self.fields($0)["alert_id"] ?? "" }).count == 1)
        #expect(
            Set(rendered.map { Self.fields($0)["startsAt"] ?? "" }) == [Timestamp.format(readings[0].time)])

        let mailRun = await InProcess.dryRun(readings: [s.path("all.csv")], render: "mail", config: config)
        #expect(mailRun.status == 0, "\(mailRun.stderr)")
        let shownMails = Self.payloads(mailRun.stdout).map(Self.headers)
        #expect(shownMails.count == mails.count, "\(mailRun.stdout)")
        var earlier: Set<String> = []
        for (sent, shown) in zip(mails, shownMails) {
            for name in ["Subject", "In-Reply-To", "References"] {
                #expect(sent.rawHeader(name) == shown[name.lowercased()], "\(name)")
            }
            // A reply answers only a message the replay rendered before it.
            if let reply = shown["in-reply-to"] { #expect(earlier.contains(reply), "\(reply) never rendered") }
            if let id = shown["message-id"] { earlier.insert(id) }
        }
        // The thread's root is the same message in both.
        #expect(mails.first?.rawHeader("Message-ID") == shownMails.first?["message-id"])
        #expect(Set(shownMails.map { $0["subject"] ?? "" }).count == 1, "one subject per episode")
    }

    /// The payloads of `dry-run --render`'s output: the lines after each `--- N: …` line.
    static func payloads(_ stdout: String) -> [[String]] {
        var out: [[String]] = []
        // An email's lines end in CRLF, one Character in Swift: split on any line end.
        for line in stdout.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            if line.hasPrefix("--- ") {
                out.append([])
            } else if !out.isEmpty {
                out[out.count - 1].append(String(line).replacingOccurrences(of: "\r", with: ""))
            }
        }
        return out.map { lines in
            var l = lines
            while l.last?.isEmpty == true { l.removeLast() }
            return l
        }
    }

    /// An email's headers (lower-cased names), up to the first blank line; folded lines joined.
    static func headers(_ lines: [String]) -> [String: String] {
        var out: [String: String] = [:]
        var last: String?
        for line in lines {
            if line.isEmpty { break }
            if line.first == " " || line.first == "\t", let k = last {
                out[k, default: ""] += line
                continue
            }
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            out[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            last = name
        }
        return out
    }

    /// A generic webhook's fields that say which alert and episode it is about.
    static func fields(_ body: [String: Any]) -> [String: String] {
        guard let a = (body["alerts"] as? [[String: Any]])?.first else { return [:] }
        let annotations = a["annotations"] as? [String: String] ?? [:]
        return [
            "status": a["status"] as? String ?? "", "startsAt": a["startsAt"] as? String ?? "",
            "endsAt": a["endsAt"] as? String ?? "", "fingerprint": a["fingerprint"] as? String ?? "",
            "alert_id": annotations["alert_id"] ?? "", "level": annotations["level"] ?? "",
            "previous_level": annotations["previous_level"] ?? "", "summary": annotations["summary"] ?? "",
            "groupKey": body["groupKey"] as? String ?? "", "count": "\((body["alerts"] as? [Any])?.count ?? 0)",
        ]
    }
}

extension SMTPServer.Message {
    /// A header as sent (RFC 2047 words not decoded), folded lines joined as they are in the source.
    func rawHeader(_ name: String) -> String? {
        rawHeaders.first { $0.0.lowercased() == name.lowercased() }?.1
            .replacingOccurrences(of: "\r\n", with: "").replacingOccurrences(of: "\n", with: "")
    }
}
