import HTTPTypes
import Hummingbird
import KlaxonCore
import NIOCore

extension KlaxonHTTP {
    /// Re-reads the config and rules: whether it took, and the errors (FILE:LINE:COL …) if not, or
    /// the warnings if it did (a removed receiver's queued notifications that will go dead).
    public typealias Reload = @Sendable () async -> (ok: Bool, errors: [String])

    /// `POST /-/reload` (and `PUT`, as Prometheus and Alertmanager take both): the same reload as
    /// SIGHUP, behind the API token (without `api.token` the endpoint is off, as the API is). As in
    /// Prometheus, 200 when the new set is in force (`reloaded`, then any warnings, one per line,
    /// each after `warning: `), 500 with the errors, one per line, when a file
    /// was bad and the running set stays. The errors quote the files: control characters in them
    /// are sent escaped (`TerminalText`), as `curl` prints the body to a terminal.
    static func addReload(to router: Router<BasicRequestContext>, settings: Settings, reload: @escaping Reload) {
        let handler: @Sendable (Request, BasicRequestContext) async throws -> Response = { _, _ in
            let (ok, errors) = await reload()
            let lines = errors.map { TerminalText.safe($0) + "\n" }.joined()
            let body =
                ok
                ? "reloaded\n" + errors.map { "warning: " + TerminalText.safe($0) + "\n" }.joined()
                : "failed to reload config:\n" + lines
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; charset=utf-8"
            return Response(
                status: ok ? .ok : .internalServerError, headers: headers,
                body: .init(byteBuffer: ByteBuffer(string: body)))
        }
        let team = router.group().add(middleware: TeamTokenMiddleware(token: settings.apiToken))
        team.post("/-/reload", use: handler)
        team.put("/-/reload", use: handler)
    }
}
