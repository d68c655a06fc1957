/// The server's last line against an empty credential: the config refuses empty secrets, but a
/// secret that is empty or only whitespace here (a caller that skipped the config, a bug) must never
/// make `token=`, `Bearer ` or an HMAC with an empty key count as proof of anything.
public enum ServerSecrets {
    /// True when `secret` can authenticate anything: present, and more than whitespace.
    public static func usable(_ secret: String?) -> Bool {
        guard let secret else { return false }
        return secret.unicodeScalars.contains { !($0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r") }
    }
}
