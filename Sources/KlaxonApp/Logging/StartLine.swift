import KlaxonCore
import Logging

/// The first line `klaxon run` and `klaxon demo` log: which build runs.
public enum StartLine {
    public static func log(to logger: Logger) {
        logger.info(
            "klaxon starting",
            metadata: [
                "version": "\(BuildInfo.version)", "revision": "\(BuildInfo.revision)", "built": "\(BuildInfo.date)",
                "swift": "\(BuildInfo.swift)",
            ])
    }
}
