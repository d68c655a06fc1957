import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import NIOCore

/// Paging for the API's lists (`/api/v1/alerts`, `/api/v1/silences`, `/api/v1/notifications`): `limit` (default 1,000,
/// clamped to 10,000) and `after` (the `next` of the previous answer). Each answer keeps its list
/// field and adds `total` and `next` (null on the last page).
enum APIPaging {
    static let defaultLimit = 1_000
    static let maximumLimit = FiringQueries.maximumPage

    /// The request's `limit` and `after`, or a 400 answer naming what is wrong.
    static func read<Cursor: LosslessStringConvertible>(_ request: Request, as: Cursor.Type) -> Result<
        (limit: Int, after: Cursor?), Refusal
    > {
        let query = request.uri.queryParameters
        var limit = defaultLimit
        if let text = query.get("limit") {
            // Digits only; a huge number is clamped, anything else (signs, zero, words) refused.
            guard !text.isEmpty, text.utf8.count <= 100, text.utf8.allSatisfy({ (48...57).contains($0) }),
                text.utf8.contains(where: { $0 != 48 })
            else {
                return .failure(Refusal(message: "limit: a whole number from 1 to \(maximumLimit)"))
            }
            limit = min(maximumLimit, Int(text) ?? maximumLimit)
        }
        var after: Cursor? = nil
        if let text = query.get("after") {
            guard let c = Cursor(text) else {
                return .failure(Refusal(message: "after: not a position this list gave as next"))
            }
            after = c
        }
        return .success((limit, after))
    }

    struct Refusal: Error {
        var message: String
        var response: Response { APIError(.badRequest, message).response }
    }

    /// `GET /api/v1/alerts`: one page of firing alerts. The JSON is built off the pool (a page may
    /// hold 10,000 alerts), and a large answer hands its memory back afterwards.
    static func alerts(_ request: Request, store: any AlertReads) async throws -> Response {
        let page: FiringPage
        switch read(request, as: FiringCursor.self) {
        case .failure(let refusal): return refusal.response
        case .success(let p): page = try await store.firingAlerts(limit: p.limit, after: p.after)
        }
        let total = try await store.firingAlertCounts().total
        let data = try await offPool { () -> Data in
            APIJSON.encode(
                APIAlertPage(alerts: page.alerts.map(APIAlert.init), next: page.next?.description, total: total))
                + Data("\n".utf8)
        }
        return respond(data, large: page.alerts.count > 1_000)
    }

    /// `GET /api/v1/silences`: one page of the silences not ended.
    static func silences(_ request: Request, store: any SilenceStore, now: Int64) async throws -> Response {
        let page: SilencePage
        switch read(request, as: SilenceCursor.self) {
        case .failure(let refusal): return refusal.response
        case .success(let p):
            page = try await store.silences(now: now, includeExpired: false, limit: p.limit, after: p.after)
        }
        let data = try await offPool { () -> Data in
            APIJSON.encode(
                APISilencePage(
                    next: page.next?.description, silences: page.silences.map(APISilence.init), total: page.total))
                + Data("\n".utf8)
        }
        return respond(data, large: page.silences.count > 1_000)
    }

    /// `GET /api/v1/notifications`: one page of the notification history, newest first; `alert`
    /// (an alert's id: its episode's, or any of its transitions') and `receiver` narrow it.
    static func notifications(_ request: Request, store: any NotificationHistory) async throws -> Response {
        let query = request.uri.queryParameters
        var filter = NotificationFilter()
        if let text = query.get("alert") {
            guard (1...19).contains(text.utf8.count), text.utf8.allSatisfy({ (48...57).contains($0) }),
                let id = Int64(text), id > 0
            else {
                return Refusal(message: "alert: an alert's id (a positive whole number)").response
            }
            filter.episode = id
        }
        if let receiver = query.get("receiver") {
            guard !receiver.isEmpty, receiver.utf8.count <= NotificationFilter.maxReceiver else {
                return Refusal(message: "receiver: a receiver's name (1 to \(NotificationFilter.maxReceiver) bytes)")
                    .response
            }
            filter.receiver = receiver
        }
        let page: NotificationPage
        switch read(request, as: NotificationCursor.self) {
        case .failure(let refusal): return refusal.response
        case .success(let p): page = try await store.notifications(filter, limit: p.limit, after: p.after)
        }
        let data = try await offPool { () -> Data in
            APIJSON.encode(
                APINotificationPage(
                    notifications: page.entries.map(APINotification.init), next: page.next?.description,
                    total: page.total))
                + Data("\n".utf8)
        }
        return respond(data, large: page.entries.count > 1_000)
    }

    static func respond(_ data: Data, large: Bool) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        let response = Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
        // Trimming walks the heap: off the pool, once the big intermediates are gone.
        if large { releaseFreeMemoryLater() }
        return response
    }
}
