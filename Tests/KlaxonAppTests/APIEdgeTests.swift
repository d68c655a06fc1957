import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KlaxonCore
import KlaxonSQLite
import NIOCore
import Testing

@testable import KlaxonServer

/// The API's edge in process (HummingbirdTesting's `.router`, the in-memory store; no socket, no
/// process): one token guard in front of every `/api` route and `/-/reload`, and one error type
/// whose bodies are byte for byte what the hand-built dictionaries wrote (issue 40).
@Suite("API edge, in process")
struct APIEdgeTests {
    static let token = "edge-token"
    static let owners = ["ann": "ann-token-123", "bob": "bob-token-456"]

    static func app(token: String?, owners: [String: String] = owners) throws -> some ApplicationProtocol {
        let store = try SQLiteStore.inMemory()
        let settings = KlaxonHTTP.Settings(apiToken: token, ownerTokens: owners)
        let router = Router()
        APIRoutes.add(to: router, store: store, settings: settings)
        AlertmanagerAPI.add(to: router, store: store, settings: settings)
        KlaxonHTTP.addReload(to: router, settings: settings, reload: { (true, []) })
        return Application(router: router)
    }

    /// Every route behind the team token.
    static let teamRoutes: [(HTTPRequest.Method, String)] = [
        (.get, "/api/v1/silences"), (.post, "/api/v1/silences"), (.post, "/api/v1/alerts/1/ack"),
        (.get, "/api/v1/notifications"),
        (.delete, "/api/v1/silences/abc"), (.get, "/api/v2/status"), (.get, "/api/v2/receivers"),
        (.get, "/api/v2/alerts"), (.get, "/api/v2/alerts/groups"), (.get, "/api/v2/silences"),
        (.get, "/api/v2/silence/abc"), (.delete, "/api/v2/silence/abc"), (.post, "/api/v2/silences"),
        (.post, "/-/reload"), (.put, "/-/reload"),
    ]
    static let ownerRoutes: [(HTTPRequest.Method, String)] = [
        (.get, "/api/v1/trips"), (.get, "/api/v1/trips/x"), (.delete, "/api/v1/trips/x"),
    ]

    static func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

    static func text(_ response: TestResponse) -> String { String(buffer: response.body) }

    @Test("without api.token every team route is 404, off; an owner route without its token is 401")
    func apiOff() async throws {
        try await Self.app(token: nil).test(.router) { client in
            for (method, path) in Self.teamRoutes {
                let r = try await client.execute(uri: path, method: method, headers: Self.bearer("x"))
                #expect(r.status == .notFound, "\(method) \(path)")
                #expect(Self.text(r) == "{\"error\":\"the API is off: set api.token in the config\"}\n")
                #expect(r.headers[.contentType] == "application/json")
            }
            for (method, path) in Self.ownerRoutes {
                let r = try await client.execute(uri: path, method: method)
                #expect(r.status == .unauthorized, "\(method) \(path)")
            }
        }
    }

    @Test(
        "with api.token: no token or a wrong one (or an owner's) is 401 with WWW-Authenticate, before the body is read")
    func wrongTokens() async throws {
        try await Self.app(token: Self.token).test(.router) { client in
            for (method, path) in Self.teamRoutes {
                for headers in [[:], Self.bearer("wrong"), Self.bearer("ann-token-123"), [.authorization: Self.token]]
                    as [HTTPFields]
                {
                    let r = try await client.execute(
                        uri: path, method: method, headers: headers,
                        body: ByteBuffer(string: String(repeating: "x", count: 300 << 10)))
                    #expect(r.status == .unauthorized, "\(method) \(path) \(headers)")
                    #expect(Self.text(r) == "{\"error\":\"missing or wrong bearer token\"}\n")
                    #expect(r.headers[.wwwAuthenticate] == "Bearer")
                }
            }
            for (method, path) in Self.ownerRoutes {
                for headers in [[:], Self.bearer(Self.token), Self.bearer("ann-token-12")] as [HTTPFields] {
                    let r = try await client.execute(uri: path, method: method, headers: headers)
                    #expect(r.status == .unauthorized, "\(method) \(path)")
                    #expect(Self.text(r) == "{\"error\":\"missing or wrong bearer token\"}\n")
                    #expect(r.headers[.wwwAuthenticate] == "Bearer")
                }
            }
        }
    }

    @Test("the API's errors: one type, the bodies the dictionaries wrote (v1 an object and a newline, v2 a string)")
    func errorBodies() async throws {
        try await Self.app(token: Self.token).test(.router) { client in
            func call(_ method: HTTPRequest.Method, _ path: String, _ body: String? = nil, token: String = Self.token)
                async throws -> (HTTPResponse.Status, String)
            {
                let r = try await client.execute(
                    uri: path, method: method, headers: Self.bearer(token), body: body.map { ByteBuffer(string: $0) })
                return (r.status, Self.text(r))
            }
            let v1: [(HTTPRequest.Method, String, String?, HTTPResponse.Status, String?)] = [
                (.post, "/api/v1/silences", "[1]", .badRequest, "the body must be a JSON object"),
                (.post, "/api/v1/silences", "nope", .badRequest, "the body must be a JSON object"),
                (
                    .post, "/api/v1/silences", "{\"for\":\"2h\"}", .badRequest,
                    "matchers: a list like [\\\"rule=flood-stage\\\", \\\"station=14211720\\\"]"
                ),
                (
                    .post, "/api/v1/silences", "{\"matchers\":[\"a=b\"],\"for\":\"soon\"}", .badRequest,
                    "for: a duration like 2h"
                ),
                (
                    .post, "/api/v1/silences", "{\"matchers\":[\"a=b\"],\"for\":\"1h\",\"created_by\":\"slack:U1\"}",
                    .badRequest, nil
                ),
                (.post, "/api/v1/alerts/abc/ack", nil, .badRequest, "the alert id is a positive number"),
                (.post, "/api/v1/alerts/5/ack", "{\"by\":5}", .notFound, "no firing alert has id 5"),
                (.post, "/api/v1/alerts/5/ack", "[]", .badRequest, "the body must be a JSON object"),
                (.delete, "/api/v1/silences/zz", nil, .notFound, "no active silence zz"),
            ]
            for (method, path, body, status, message) in v1 {
                let (s, text) = try await call(method, path, body)
                #expect(s == status, "\(path) \(body ?? ""): \(text)")
                if let message {
                    #expect(text == "{\"error\":\"\(message)\"}\n", "\(path) \(body ?? "")")
                } else {
                    #expect(text.hasPrefix("{\"error\":\"") && text.hasSuffix("\"}\n"), "\(text)")
                }
            }
            let trip = try await call(.get, "/api/v1/trips/x", token: "ann-token-123")
            #expect(trip.0 == .notFound && trip.1 == "{\"error\":\"trip not found\"}\n")
            let trips = try await call(.get, "/api/v1/trips", token: "bob-token-456")
            #expect(trips.0 == .ok && trips.1 == "{\"total\":0,\"trips\":[]}\n")

            let v2: [(HTTPRequest.Method, String, String?, HTTPResponse.Status, String)] = [
                (.get, "/api/v2/silence/nope", nil, .notFound, "\"silence not found\""),
                (.delete, "/api/v2/silence/nope", nil, .notFound, "\"silence not found\""),
                (
                    .post, "/api/v2/silences", "[1]", .badRequest,
                    "\"parsing silence body from \\\"\\\" failed, because the body is not an object\""
                ),
                (
                    .get, "/api/v2/alerts?active=maybe", nil, .badRequest,
                    "\"active in query must be of type boolean: \\\"maybe\\\"\""
                ),
            ]
            for (method, path, body, status, expected) in v2 {
                let (s, text) = try await call(method, path, body)
                #expect(s == status && text == expected, "\(path): \(text)")
            }
        }
    }

    @Test("a silence made through /api/v1 reads back with its fields, in a page whose next is null")
    func silenceRoundTrip() async throws {
        try await Self.app(token: Self.token).test(.router) { client in
            let made = try await client.execute(
                uri: "/api/v1/silences", method: .post, headers: Self.bearer(Self.token),
                body: ByteBuffer(string: #"{"matchers":["rule=high","station=S/1"],"for":"2h","comment":"c"}"#))
            #expect(made.status == .created, "\(Self.text(made))")
            let o = try JSONSerialization.jsonObject(with: Data(made.body.readableBytesView)) as? [String: Any] ?? [:]
            #expect(Set(o.keys) == ["id", "matchers", "starts", "ends", "comment", "created_by"])
            #expect(o["matchers"] as? [String] == ["rule=high", "station=S/1"] && o["created_by"] as? String == "api")
            #expect(Self.text(made).contains("S/1") && Self.text(made).hasSuffix("}\n"), "slashes unescaped")
            let page = try await client.execute(
                uri: "/api/v1/silences", method: .get, headers: Self.bearer(Self.token))
            #expect(Self.text(page).hasPrefix("{\"next\":null,\"silences\":[{\"comment\":\"c\",\"created_by\":\"api\""))
            #expect(Self.text(page).hasSuffix(",\"total\":1}\n"))
        }
    }
}
