import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KlaxonApp
import KlaxonCore
import KlaxonSQLite
import KlaxonStore
import NIOCore
import Testing

@testable import KlaxonServer

/// The notification history (issue 41) in process (HummingbirdTesting's `.router`, the in-memory
/// store): `GET /api/v1/notifications`, paged like `/api/v1/alerts`, and the site's `/notifications`
/// and the section of an alert's page, with every value from data escaped.
@Suite("notification history: the API and the site, in process")
struct NotificationHistoryTests {
    static let token = "history-token"
    static let hostile = "<script>alert(1)</script>&\"'"
    static let t0: Int64 = 1_800_000_000

    /// `flood` fires at A (sent to `ops` and to `pager`), A rises to minor (`ops` is sent it; the
    /// pager's send is given up with an error holding markup), and B fires (queued). Returns the store
    /// and A's alert id.
    static func filled() async throws -> (SQLiteStore, Int64) {
        let store = try SQLiteStore.inMemory()
        let rules = [
            Rule(
                name: "flood",
                kind: LevelsRule(
                    metric: "gage_height", levels: [.init(name: "action", at: 9), .init(name: "minor", at: 11)]),
                notify: ["ops", "pager"])
        ]
        func evaluate(_ station: String, _ at: Int64, _ value: Double, failing: String? = nil, send: Bool) async throws
        {
            _ = try await store.readingWriter().write([
                Reading(station: station, metric: "gage_height", time: at, value: value, unit: "ft")
            ])
            _ = try await Evaluate.run(store: store, rules: rules, now: at, routing: Routing(), queuedAt: at * 1000)
            guard send else { return }
            let batches = try await store.claim(now: at * 1000 + 1, lease: 60_000)
            try await store.apply(
                batches.map { b -> OutboxOutcome in
                    b.receiver == failing
                        ? .finish(b, state: .dead, now: at * 1000 + 2, retryAt: nil, error: "HTTP 500 \(hostile)")
                        : .finish(b, state: .sent, now: at * 1000 + 2, retryAt: nil, error: nil)
                })
        }
        try await evaluate("A", t0, 9.5, send: true)
        try await evaluate("A", t0 + 600, 11.5, failing: "pager", send: true)
        try await evaluate("B", t0 + 1200, 9.5, send: false)
        let id = try #require(try await store.transitions().first { $0.station == "A" }?.id)
        return (store, id)
    }

    static func app(_ store: SQLiteStore) -> some ApplicationProtocol {
        let router = Router()
        APIRoutes.add(to: router, store: store, settings: KlaxonHTTP.Settings(apiToken: token))
        StatusSite.add(
            to: router, store: store, settings: StatusSite.Settings(timeZone: TimeZone(identifier: "UTC")!),
            now: { t0 + 3600 })
        return Application(router: router)
    }

    static let bearer: HTTPFields = [.authorization: "Bearer \(token)"]

    static func json(_ r: TestResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(String(buffer: r.body).utf8)) as? [String: Any])
    }

    @Test("GET /api/v1/notifications: newest first, paged, narrowed by alert and receiver")
    func api() async throws {
        let (store, alert) = try await Self.filled()
        try await Self.app(store).test(.router) { client in
            // Behind the team token, like every /api/v1 list.
            #expect(try await client.execute(uri: "/api/v1/notifications", method: .get).status == .unauthorized)

            let r = try await client.execute(uri: "/api/v1/notifications", method: .get, headers: Self.bearer)
            #expect(r.status == .ok && r.headers[.contentType] == "application/json")
            let page = try Self.json(r)
            #expect(page["total"] as? Int == 6)
            #expect(page.keys.contains("next") && page["next"] is NSNull)
            let items = try #require(page["notifications"] as? [[String: Any]])
            #expect(items.count == 6)
            // Newest first: B's firing (queued), A's rise (one failed, one delivered), A's firing.
            let states = items.map { $0["state"] as? String ?? "" }
            #expect(states.prefix(2) == ["pending", "pending"])
            #expect(
                states[2...3].sorted() == ["delivered", "failed"] && states.suffix(2) == ["delivered", "delivered"])
            let failed = try #require(items.first { $0["state"] as? String == "failed" })
            #expect(failed["receiver"] as? String == "pager" && failed["outbox_state"] as? String == "dead")
            #expect(failed["reason"] as? String == "HTTP 500 \(Self.hostile)")
            #expect(failed["sent_at"] is NSNull || failed["sent_at"] == nil)
            let carried = try #require(failed["alert"] as? [String: Any])
            #expect(carried["id"] as? Int64 == alert || carried["id"] as? Int == Int(alert))
            #expect(carried["level"] as? String == "minor" && carried["state"] as? String == "changed")
            #expect(carried["station"] as? String == "A" && carried["rule"] as? String == "flood")
            let delivered = try #require(items[2...3].first { $0["state"] as? String == "delivered" })
            #expect(delivered["sent_at"] as? String == Timestamp.format(Self.t0 + 600))
            #expect(delivered["queued_at"] as? String == Timestamp.format(Self.t0 + 600))
            #expect(delivered["purpose"] as? String == "transition" && delivered["key"] is String)

            // Narrowed: the alert's (its four), a receiver's, both.
            let ofAlert = try Self.json(
                try await client.execute(
                    uri: "/api/v1/notifications?alert=\(alert)", method: .get, headers: Self.bearer))
            #expect(ofAlert["total"] as? Int == 4)
            let ofPager = try Self.json(
                try await client.execute(
                    uri: "/api/v1/notifications?receiver=pager&alert=\(alert)", method: .get, headers: Self.bearer))
            #expect(
                (ofPager["notifications"] as? [[String: Any]])?.map { $0["state"] as? String } == [
                    "failed", "delivered",
                ])

            // Paged: `limit` and `after` as /api/v1/alerts takes them; `next` visits each once.
            var seen: [String] = []
            var uri = "/api/v1/notifications?limit=4"
            for _ in 0..<5 {
                let p = try Self.json(try await client.execute(uri: uri, method: .get, headers: Self.bearer))
                seen += (p["notifications"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                guard let next = p["next"] as? String else { break }
                uri = "/api/v1/notifications?limit=4&after=\(next)"
            }
            #expect(seen == items.compactMap { $0["id"] as? String })

            // Bad input is a 400 that says what is wrong.
            for bad in ["alert=0", "alert=x", "alert=-1", "limit=0", "after=abc", "receiver="] {
                let b = try await client.execute(
                    uri: "/api/v1/notifications?\(bad)", method: .get, headers: Self.bearer)
                #expect(b.status == .badRequest, "\(bad)")
            }
        }
    }

    @Test("/notifications and the alert's page: the history, escaped, paged, narrowed")
    func site() async throws {
        let (store, alert) = try await Self.filled()
        try await Self.app(store).test(.router) { client in
            let r = try await client.execute(uri: "/notifications", method: .get)
            #expect(r.status == .ok)
            let page = String(buffer: r.body)
            #expect(page.contains("id=\"notifications\""))
            #expect(page.components(separatedBy: "data-notification=").count - 1 == 6)
            #expect(page.contains("data-state=\"failed\"") && page.contains("data-state=\"pending\""))
            // Data is text: the error's markup is escaped, never markup.
            #expect(!page.contains(Self.hostile) && !page.contains("<script>alert"))
            #expect(page.contains("HTTP 500 &lt;script&gt;alert(1)&lt;/script&gt;&amp;"))
            #expect(page.contains("href=\"/alerts/\(alert)\""))
            #expect(page.contains("href=\"/notifications?receiver=pager\""))

            let narrowed = String(
                buffer: try await client.execute(uri: "/notifications?alert=\(alert)&receiver=pager", method: .get).body
            )
            #expect(narrowed.components(separatedBy: "data-notification=").count - 1 == 2)
            #expect(narrowed.contains("of alert #\(alert) and receiver pager"))

            // The count says what the filter matches.
            let first = String(buffer: try await client.execute(uri: "/notifications?receiver=ops", method: .get).body)
            #expect(first.contains("showing 1–3 of 3 notifications"))

            for bad in ["alert=x", "after=abc"] {
                #expect(try await client.execute(uri: "/notifications?\(bad)", method: .get).status == .badRequest)
            }

            // The alert's page has its notifications too.
            let episode = String(buffer: try await client.execute(uri: "/alerts/\(alert)", method: .get).body)
            #expect(episode.contains("id=\"notifications-of-alert\""))
            #expect(episode.components(separatedBy: "data-notification=").count - 1 == 4)
            #expect(!episode.contains("<script>alert"))
        }
    }
}
