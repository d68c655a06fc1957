import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// An error answer of the HTTP API, thrown from a handler or a middleware: Hummingbird's router
/// answers it with `response` (it is an `HTTPResponseError`). One type for the API's JSON errors:
/// `{"error": "…"}` and a newline (`/api/v1/*`, the push, chat), or a bare JSON string, as
/// Alertmanager answers (`/api/v2/*`).
struct APIError: HTTPResponseError, Sendable {
    /// How the message is written.
    enum Form: Sendable {
        /// `{"error":"…"}` and a newline (with `matches` when there are some).
        case object
        /// `"…"`: a JSON string, as Alertmanager's API answers an error.
        case alertmanager
    }

    var status: HTTPResponse.Status
    var message: String
    var form: Form = .object
    /// The ids a too-short silence id names (`409` of `DELETE /api/v1/silences/:id`).
    var matches: [String]? = nil
    /// Headers beside the content type (`WWW-Authenticate`, `Retry-After`).
    var headers: HTTPFields = [:]

    init(
        _ status: HTTPResponse.Status, _ message: String, form: Form = .object, matches: [String]? = nil,
        headers: HTTPFields = [:]
    ) {
        self.status = status
        self.message = message
        self.form = form
        self.matches = matches
        self.headers = headers
    }

    /// An Alertmanager API error (a JSON string).
    static func alertmanager(_ status: HTTPResponse.Status, _ message: String) -> APIError {
        APIError(status, message, form: .alertmanager)
    }

    /// The API without its token: 404 when no token is set (the API is off), else 401 with
    /// `WWW-Authenticate: Bearer`.
    static func unauthorized(_ token: String?) -> APIError {
        if token == nil { return APIError(.notFound, "the API is off: set api.token in the config") }
        return APIError(.unauthorized, "missing or wrong bearer token", headers: [.wwwAuthenticate: "Bearer"])
    }

    /// The object form's body, its keys sorted as written.
    struct Body: Encodable {
        var error: String
        var matches: [String]?
    }

    func response(from request: Request, context: some RequestContext) throws -> Response { response }

    var response: Response {
        let data: Data
        switch form {
        case .object: data = APIJSON.encode(Body(error: message, matches: matches)) + Data("\n".utf8)
        case .alertmanager: data = APIJSON.encode(message)
        }
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// The JSON of the API's answers: keys sorted, `/` not escaped, no spaces: byte for byte what
/// `JSONSerialization` with `.sortedKeys` and `.withoutEscapingSlashes` wrote before the types.
enum APIJSON {
    static func encode(_ value: some Encodable) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)) ?? Data("null".utf8)
    }
}

/// The team's bearer token (`api.token`) in front of a group of routes, checked before the handler
/// runs, so before any body is read: one guard for `/api/v1/*`, `/api/v2/*` and `/-/reload`.
struct TeamTokenMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard KlaxonHTTP.authorized(request, token: token) else { throw APIError.unauthorized(token) }
        return try await next(request, context)
    }
}

/// A request to an owner's routes (`/api/v1/trips`): the owner whose token it carries
/// (`OwnerTokenMiddleware` sets it).
struct OwnerRequestContext: ChildRequestContext {
    typealias ParentContext = BasicRequestContext
    var coreContext: CoreRequestContextStorage
    var owner = ""

    init(context: BasicRequestContext) throws { coreContext = context.coreContext }
}

/// Owner tokens (`api.owner_tokens`) in front of an owner's routes: the owner a token belongs to,
/// or 401 before the handler runs.
struct OwnerTokenMiddleware: RouterMiddleware {
    typealias Context = OwnerRequestContext
    let tokens: [String: String]

    func handle(
        _ request: Request, context: OwnerRequestContext,
        next: (Request, OwnerRequestContext) async throws -> Response
    ) async throws -> Response {
        guard let owner = APIRoutes.owner(request, tokens) else { throw APIError.unauthorized("") }
        var context = context
        context.owner = owner
        return try await next(request, context)
    }
}
