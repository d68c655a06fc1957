import HTTPTypes
import Hummingbird
import KlaxonStore
import Logging

/// A request whose store call fails for a reason of the database itself (a full disk, a file-size
/// limit, a deleted or replaced database file, an I/O error) gets a clear JSON error — 507
/// Insufficient Storage when there is no room, else 503 — never a bare 500; the failure is recorded
/// in `health` (`/readyz` says `failing`, one error-level log line per spell) until a write works
/// again (see `recordWriteWorks`). A busy database is `StoreBusyMiddleware`'s: rethrown here.
struct StoreErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let health: StoreHealth

    /// The service name HTTP requests' failures are recorded under.
    static var service: String { KlaxonHTTP.httpService }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch {
            guard let failure = StoreFailure.classify(error), failure.kind != .busy else { throw error }
            // A lost database file is the file watch's to log and report (once, not per request),
            // and so is what follows from it: a new reader connection to the moved path cannot open.
            if failure.kind != .fileGone, health.file.state == .ok {
                health.failed(Self.service, error, logger: context.logger)
            }
            return KlaxonHTTP.storeFailure(failure)
        }
    }
}

extension KlaxonHTTP {
    /// The name under which HTTP requests' database failures show in `/readyz`'s `database_waiting`.
    public static let httpService = "http"

    /// 507 Insufficient Storage.
    static let insufficientStorage = HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")

    /// The answer to a request that met `failure`.
    static func storeFailure(_ failure: StoreFailure) -> Response {
        // Room may be made, and a moved file put back; a client retrying should not hammer meanwhile.
        APIError(
            failure.kind == .full ? insufficientStorage : .serviceUnavailable, failure.words,
            headers: [.retryAfter: "30"]
        ).response
    }

    /// While HTTP requests' writes have failed, tries a small write (see `Store.probeWrite`); when it
    /// works, the failure is over (`/readyz` ready again). The daemon calls this every few seconds.
    public static func recordWriteWorks(store: any HealthReads, health: StoreHealth, logger: Logger) async {
        guard health.troubles[httpService] != nil, health.file.state == .ok else { return }
        do {
            try await store.probeWrite()
            health.succeeded(httpService, logger: logger)
        } catch {
            // Still failing: the trouble stays, with the newest reason.
            health.failed(httpService, error, logger: logger)
        }
    }
}
