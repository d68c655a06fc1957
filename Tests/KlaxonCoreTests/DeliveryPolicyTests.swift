import Foundation
import KlaxonCore
import Testing

private func utc(_ s: String) -> Int64 { Timestamp.parse(s)! }

@Suite struct QuietHoursTests {
    let chicago = TimeZone(identifier: "America/Chicago")!

    func night(days: Set<QuietHours.Weekday> = Set(QuietHours.Weekday.allCases)) -> QuietHours {
        QuietHours(timeZone: chicago, from: QuietHours.minutes("22:00")!, to: QuietHours.minutes("07:00")!, days: days)
    }

    @Test func acrossMidnight() {
        let q = night()
        #expect(!q.isQuiet(at: utc("2026-06-10T21:59:00-05:00")))
        #expect(q.isQuiet(at: utc("2026-06-10T22:00:00-05:00")))
        #expect(q.isQuiet(at: utc("2026-06-10T23:30:00-05:00")))
        #expect(q.isQuiet(at: utc("2026-06-11T06:59:59-05:00")))
        #expect(!q.isQuiet(at: utc("2026-06-11T07:00:00-05:00")))
        #expect(q.end(of: utc("2026-06-11T01:00:00-05:00")) == utc("2026-06-11T07:00:00-05:00"))
    }

    @Test func springForward20260308() {
        // 22:00 CST on the 7th to 07:00 CDT on the 8th: eight hours, not nine.
        let q = night()
        #expect(!q.isQuiet(at: utc("2026-03-08T03:59:59Z")))
        #expect(q.isQuiet(at: utc("2026-03-08T04:00:00Z")))
        #expect(q.isQuiet(at: utc("2026-03-08T11:59:59Z")))
        #expect(!q.isQuiet(at: utc("2026-03-08T12:00:00Z")))
        #expect(q.end(of: utc("2026-03-08T05:00:00Z")) == utc("2026-03-08T12:00:00Z"))
    }

    @Test func fallBack20261101() {
        // 22:00 CDT on Oct 31 to 07:00 CST on Nov 1: ten hours.
        let q = night()
        #expect(!q.isQuiet(at: utc("2026-11-01T02:59:59Z")))
        #expect(q.isQuiet(at: utc("2026-11-01T03:00:00Z")))
        #expect(q.isQuiet(at: utc("2026-11-01T12:59:59Z")))
        #expect(!q.isQuiet(at: utc("2026-11-01T13:00:00Z")))
        #expect(q.end(of: utc("2026-11-01T07:30:00Z")) == utc("2026-11-01T13:00:00Z"))
    }

    @Test func periodThroughTheRepeatedHour() {
        // 01:00–03:00 on fall-back night: from the first 01:00 (CDT) to 03:00 CST, three hours.
        let q = QuietHours(timeZone: chicago, from: 60, to: 180)
        #expect(!q.isQuiet(at: utc("2026-11-01T05:59:59Z")))
        #expect(q.isQuiet(at: utc("2026-11-01T06:00:00Z")))
        #expect(q.isQuiet(at: utc("2026-11-01T08:30:00Z")))
        #expect(!q.isQuiet(at: utc("2026-11-01T09:00:00Z")))
    }

    @Test func endInsideTheSpringGap() {
        // 02:30 does not exist on 2026-03-08 in Chicago: the period ends when the clock jumps to 03:00 CDT.
        let q = QuietHours(timeZone: chicago, from: 60, to: 150)
        #expect(q.isQuiet(at: utc("2026-03-08T07:59:59Z")))
        #expect(!q.isQuiet(at: utc("2026-03-08T08:00:00Z")))
    }

    @Test func daysNameTheStartOfThePeriod() {
        let q = night(days: [.mon, .tue, .wed, .thu, .fri])
        #expect(q.isQuiet(at: utc("2026-06-12T23:00:00-05:00")))  // Friday night
        #expect(q.isQuiet(at: utc("2026-06-13T06:00:00-05:00")))  // Saturday morning, started Friday
        #expect(!q.isQuiet(at: utc("2026-06-13T23:00:00-05:00")))  // Saturday night
        #expect(!q.isQuiet(at: utc("2026-06-15T01:00:00-05:00")))  // Monday 01:00, started Sunday
        #expect(q.isQuiet(at: utc("2026-06-15T23:00:00-05:00")))  // Monday night
    }

    @Test func bypassSeverity() {
        var q = night()
        q.bypassSeverity = .critical
        let t = utc("2026-06-10T23:00:00-05:00")
        #expect(q.mutes(.warning, at: t))
        #expect(!q.mutes(.critical, at: t))
    }

    @Test func clockTimes() {
        #expect(QuietHours.minutes("07:30") == 450)
        #expect(QuietHours.minutes("24:00") == 1440)
        #expect(QuietHours.minutes("24:01") == nil)
        #expect(QuietHours.minutes("7:30") == nil)
        #expect(QuietHours.minutes("07:60") == nil)
        #expect(QuietHours.Weekday(name: "Monday") == .mon)
        #expect(QuietHours.Weekday(name: "sat") == .sat)
        #expect(QuietHours.Weekday(name: "funday") == nil)
    }
}

@Suite struct BackoffTests {
    @Test func exponentialWithCap() {
        let b = Backoff()
        #expect(b.ceiling(attempt: 1) == 1)
        #expect(b.ceiling(attempt: 2) == 2)
        #expect(b.ceiling(attempt: 9) == 256)
        #expect(b.ceiling(attempt: 10) == 300)
        #expect(b.ceiling(attempt: 1000) == 300)
        #expect(b.delay(attempt: 3, random: 0.5) == 2)
        #expect(b.delay(attempt: 3, random: 0) == 0)
    }

    @Test func retryAfterSecondsAndDates() {
        let b = Backoff()
        let now = utc("2026-01-01T00:00:00Z")
        #expect(b.retryAfter("120", now: now) == 120)
        #expect(b.retryAfter("7200", now: now) == 3600)
        #expect(b.retryAfter("Thu, 01 Jan 2026 00:00:30 GMT", now: now) == 30)
        #expect(b.retryAfter("Wed, 31 Dec 2025 23:00:00 GMT", now: now) == 0)
        #expect(b.retryAfter("soon", now: now) == nil)
        #expect(b.retryAfter("-5", now: now) == nil)
    }

    @Test func httpDateForms() {
        let t: Int64 = 784_111_777
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == t)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == t)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == t)
        #expect(HTTPDate.format(t) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("Sun, 31 Feb 1994 08:49:37 GMT") == nil)
    }
}

@Suite struct MatcherTests {
    let labels = ["rule": "river-levels", "station": "01646500", "severity": "warning", "metric": "gage_height"]

    @Test func operators() throws {
        #expect(try Matcher.parse("station=01646500").matches(labels))
        #expect(!(try Matcher.parse("station=0164650").matches(labels)))
        #expect(try Matcher.parse("severity!=info").matches(labels))
        #expect(try Matcher.parse("rule=~river-.*").matches(labels))
        #expect(!(try Matcher.parse("rule=~river").matches(labels)))  // anchored
        #expect(try Matcher.parse("metric!~temp.*").matches(labels))
        #expect(try Matcher.parse("team=").matches(labels))  // a missing label is empty
        #expect(try Matcher.parse("station=\"01646500\"").value == "01646500")
    }

    @Test func badMatchersSayWhy() {
        #expect(throws: MatcherError.self) { try Matcher.parse("nonsense") }
        #expect(throws: MatcherError.self) { try Matcher.parse("rule=~(") }
        #expect(throws: MatcherError.self) { try Matcher.parse("=value") }
    }

    @Test func silenceWindow() throws {
        let s = Silence(
            id: "s1", matchers: [try Matcher.parse("station=01646500")], starts: 100, ends: 200, comment: "work",
            createdBy: "me")
        #expect(!s.mutes(labels, at: 99))
        #expect(s.mutes(labels, at: 100))
        #expect(s.mutes(labels, at: 199))
        #expect(!s.mutes(labels, at: 200))
        #expect(!s.mutes(["station": "other"], at: 150))
    }
}

@Suite struct JSONTextTests {
    @Test func encodesWhatPayloadBuildersProduce() throws {
        let value: JSONValue = [
            "b": [1, .number(2.5), true, .null], "a": "quote \" backslash \\ newline \n tab \t bell \u{7} é ☔",
            "nested": [["x": "y"]], "n": JSONValue(Int64(-3)), "whole": .number(12.0),
        ]
        let text = JSONText.encode(value)
        #expect(text.hasPrefix("{\"a\":"))  // keys sorted
        #expect(text.contains(#""b":[1,2.5,true,null]"#))
        #expect(text.contains(#"\u0007"#))
        #expect(text.contains(#""whole":12"#))
        // A real parser reads back exactly what went in.
        let back = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(back["a"] as? String == value["a"]?.string)
        #expect((back["nested"] as? [[String: String]]) == [["x": "y"]])
        #expect(back["n"] as? Int == -3)
    }
}

@Suite struct RouteIndexTests {
    @Test("a row queued under a route this configuration no longer has gets the defaults")
    func routeFromAnOlderConfiguration() {
        let routing = Routing(routes: [Route(receivers: ["a"], groupWait: 30)], defaults: Route(groupWait: 5))
        #expect(routing.route(0).groupWait == 30)
        #expect(routing.route(nil).groupWait == 5)
        #expect(routing.route(7).groupWait == 5)
        #expect(routing.route(-1).groupWait == 5)
    }
}

@Suite struct ResolvePlanTests {
    func resolve(level: String? = nil) -> Transition {
        Transition(
            rule: "flood", kind: "levels", station: "G1", metric: "gage_height", state: .resolved, level: level,
            fromLevel: "major", at: 0, value: 3, unit: "ft", severity: .critical, labels: [:], summary: "",
            explanation: "")
    }

    @Test("a resolve owed to a receiver the routing no longer sends the alert to goes with the defaults' timing")
    func receiverNoLongerRouted() throws {
        let routing = Routing(
            routes: [Route(matchers: [try Matcher.parse("rule=flood")], receivers: ["pager"], groupInterval: 600)],
            defaults: Route(groupBy: ["rule"], groupWait: 5, groupInterval: 60))
        let plan = routing.resolvePlan(for: resolve(), notify: [], heardBy: ["chat", "mail"])
        #expect(plan.map(\.receiver) == ["chat", "mail"])
        #expect(plan.allSatisfy { $0.route == nil && $0.groupKey == "rule=flood" && $0.groupInterval == 60 })
        #expect(
            routing.resolvePlan(for: resolve(), notify: [], heardBy: ["pager"]).isEmpty, "routed: its route decides")
        #expect(routing.resolvePlan(for: resolve(), notify: ["chat"], heardBy: ["chat"]).isEmpty, "the rule's notify")
    }

    @Test("a receiver still routed the alert on a route without send_resolved is owed no resolve")
    func sendResolvedFalseHolds() throws {
        let routing = Routing(routes: [Route(receivers: ["chat"], sendResolved: false)])
        #expect(routing.deliveries(for: resolve(), notify: []).isEmpty)
        #expect(routing.resolvePlan(for: resolve(), notify: [], heardBy: ["chat"]).isEmpty)
    }

    @Test("a route that matched the firing's level and not the resolve's: its receiver is owed the resolve")
    func levelRoute() throws {
        let routing = Routing(routes: [Route(matchers: [try Matcher.parse("level=major")], receivers: ["pager"])])
        #expect(routing.deliveries(for: resolve(), notify: []).isEmpty)
        #expect(routing.resolvePlan(for: resolve(), notify: [], heardBy: ["pager"]).map(\.receiver) == ["pager"])
    }

    @Test("only a resolve is owed anything")
    func onlyResolves() {
        var t = resolve(level: "major")
        t.state = .firing
        #expect(Routing().resolvePlan(for: t, notify: [], heardBy: ["chat"]).isEmpty)
    }
}
