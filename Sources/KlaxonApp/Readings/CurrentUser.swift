import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The user a command runs as, for what it records (who acked, who silenced, whose trip): `$USER`
/// when set and not empty, else the account's name from the password database, which systemd, cron
/// and containers have when they set no `$USER`; the numeric uid only when the account has no name.
public enum CurrentUser {
    public static var name: String {
        if let user = ProcessInfo.processInfo.environment["USER"], !user.isEmpty { return user }
        return accountName(uid: geteuid())
    }

    /// The name of account `uid`, or `uid:N` when the password database has none.
    static func accountName(uid: uid_t) -> String {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>? = nil
        var buffer = [CChar](repeating: 0, count: 4096)
        if getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, let found = result?.pointee.pw_name {
            let name = String(cString: found)
            if !name.isEmpty { return name }
        }
        return "uid:\(uid)"
    }
}
