/// Which build this is: `klaxon --version`, `klaxon_build_info`, `/readyz` and the log's first line.
///
/// A build from the source tree says `version` with `-dev`, the commit its git clone was at (the
/// `RevisionStamp` build plugin generates `checkedOutRevision()` before each build; uncommitted
/// changes are not shown) and an unknown date; `Deploy/release.sh` builds from a clean export of a
/// commit and stamps the three lines marked `stamped` (it rewrites them in its copy, never in the
/// work tree).
public enum BuildInfo {
    /// The release's version (semantic versioning, no leading `v`).
    public static let version = "0.1.0-dev"  // stamped
    /// The git commit it was built from (40 hex digits), or `unknown`: the release's stamp, else
    /// the commit of the git clone it was built in, else (a tree without git) `unknown`.
    public static var revision: String {
        stampedRevision != "unknown" ? stampedRevision : checkedOutRevision()
    }
    /// The commit `Deploy/release.sh` stamps, or `unknown`.
    static let stampedRevision = "unknown"  // stamped
    /// When it was built (ISO 8601, UTC), or `unknown`.
    public static let date = "unknown"  // stamped

    /// The compiler's language version, as `swift --version` says it (major.minor).
    public static var swift: String {
        #if compiler(>=6.4)
            return "6.4+"
        #elseif compiler(>=6.3)
            return "6.3"
        #elseif compiler(>=6.2)
            return "6.2"
        #elseif compiler(>=6.1)
            return "6.1"
        #else
            return "6.0"
        #endif
    }

    /// The short revision (12 hex digits) or `unknown`.
    public static var shortRevision: String {
        revision == "unknown" ? revision : String(revision.prefix(12))
    }

    /// One line: `0.1.0 (revision 0123456789ab, built 2026-11-28T01:00:00Z, Swift 6.3)`.
    public static var line: String {
        "\(version) (revision \(shortRevision), built \(date), Swift \(swift))"
    }
}
