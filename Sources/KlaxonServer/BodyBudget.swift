import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// The bytes of request bodies the server buffers at once, across every connection. Each route
/// bounds its own body (`collectBody(upTo:)`), but an outsider opening a thousand connections that
/// each send a route's largest body before any check can answer would still hold a thousand of
/// them (issue 38: 1,192 connections sending 1 MiB to `/chat/slack/actions` took RSS from 111 MB
/// to 1,278 MB). So a request takes its share of this budget before its body is read, and gives it
/// back when its response is made: a request past the budget is answered 503 at once, its body
/// never read (Hummingbird discards it as it streams in). The share is the body's declared
/// `Content-Length`, or the route's limit when the length is not declared (chunked).
///
/// Why by hand: Hummingbird bounds one body (`collect(upTo:)`) and NIO one connection's reads;
/// neither bounds the sum across connections.
public final class BodyBudget: Sendable {
    /// The most bytes reserved at once.
    public let limit: Int
    private let state = Mutex((used: 0, highWater: 0))

    public init(limit: Int) { self.limit = max(0, limit) }

    /// Bytes reserved now.
    public var inUse: Int { state.withLock { $0.used } }
    /// The most bytes ever reserved at once (tests and diagnostics).
    public var highWater: Int { state.withLock { $0.highWater } }

    /// Reserves `bytes`; false (nothing reserved) when that would pass `limit`.
    func reserve(_ bytes: Int) -> Bool {
        state.withLock { s in
            guard bytes <= limit - s.used else { return false }
            s.used += bytes
            s.highWater = max(s.highWater, s.used)
            return true
        }
    }

    func release(_ bytes: Int) {
        state.withLock { $0.used = max(0, $0.used - bytes) }
    }

    /// The current request's reservations (set by `BodyBudgetMiddleware`).
    @TaskLocal static var ledger: Ledger?

    /// What one request reserved: given back together when its response is made.
    final class Ledger: Sendable {
        let budget: BodyBudget
        private let held = Mutex(0)

        init(_ budget: BodyBudget) { self.budget = budget }

        func take(_ bytes: Int) -> Bool {
            guard budget.reserve(bytes) else { return false }
            held.withLock { $0 += bytes }
            return true
        }

        func releaseAll() {
            let bytes = held.withLock { h -> Int in
                defer { h = 0 }
                return h
            }
            budget.release(bytes)
        }
    }
}

/// Gives each request a ledger on `budget` for the bodies its handler collects, and returns what
/// it reserved once the handler has answered.
struct BodyBudgetMiddleware<Context: RequestContext>: RouterMiddleware {
    let budget: BodyBudget

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let ledger = BodyBudget.Ledger(budget)
        defer { ledger.releaseAll() }
        return try await BodyBudget.$ledger.withValue(ledger) { try await next(request, context) }
    }
}

extension Request {
    /// The body, at most `limit` bytes, read only after its bounds are checked: a declared
    /// `Content-Length` over `limit` is 413 before a byte is read, and the body's share of the
    /// server's `BodyBudget` must be free, else 503 (`Retry-After: 1`), also before a byte is read.
    /// Every handler reads its body through this, never `body.collect(upTo:)` directly.
    func collectBody(upTo limit: Int) async throws -> ByteBuffer {
        let declared = headers[.contentLength].flatMap { Int($0) }.map { max(0, $0) }
        if let declared, declared > limit {
            throw HTTPError(.contentTooLarge, message: "the body is larger than \(limit) bytes")
        }
        if let ledger = BodyBudget.ledger, !ledger.take(min(limit, declared ?? limit)) {
            throw HTTPError(
                .serviceUnavailable, headers: [.retryAfter: "1"], message: "too many request bodies at once; try again")
        }
        return try await body.collect(upTo: limit)
    }
}
