import Synchronization

/// Sessions signed out before they expired, so their cookies stop working at once.
///
/// Sessions are stateless signed cookies (`SiteSession`); signing out only asks the browser to drop
/// the cookie, which a copy of it would outlive. So sign-out also records the session's nonce here
/// until the session's own expiry (at most `SiteSession.lifetime`), and a cookie whose nonce is here
/// is no session.
///
/// This list is in memory and per process: a restart forgets it (with a random `site.secret` every
/// cookie dies with the process anyway), and with two daemons sharing a configured `site.secret`
/// (high availability) a sign-out on one does not reach the other. It is bounded: at `capacity`
/// entries, after dropping expired ones, every session issued until now is revoked (`issuedAfter`)
/// rather than forgetting one sign-out: failing closed signs people out, never back in.
final class SessionRevocations: Sendable {
    struct State {
        /// Nonce → the session's expiry.
        var revoked: [String: Int64] = [:]
        /// Sessions that expire at or before this were issued before a revoke-all: refused.
        var expiringAfter: Int64 = .min
    }

    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int = 10_000) { self.capacity = capacity }

    /// Records a signed-out session.
    func revoke(nonce: String, expires: Int64, now: Int64) {
        state.withLock { s in
            guard expires > now else { return }
            if s.revoked.count >= capacity { s.revoked = s.revoked.filter { $0.value > now } }
            if s.revoked.count >= capacity {
                // Full of live entries: revoke every session issued so far (all expire by now + lifetime).
                s.revoked = [:]
                s.expiringAfter = now + SiteSession.lifetime
                return
            }
            s.revoked[nonce] = expires
        }
    }

    /// Whether a session (its nonce and expiry) was signed out.
    func isRevoked(nonce: String, expires: Int64) -> Bool {
        state.withLock { s in expires <= s.expiringAfter || s.revoked[nonce] != nil }
    }

    var count: Int { state.withLock { $0.revoked.count } }
}
