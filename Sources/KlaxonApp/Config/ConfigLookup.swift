import Foundation

/// Which `klaxon.yaml` a command reads, the way Alertmanager's and Prometheus' tools find theirs:
/// `--config`, else the `KLAXON_CONFIG` environment variable, else `/etc/klaxon/klaxon.yaml` when that
/// file exists, else none (a command that can run without one uses its defaults). Every command that
/// takes `--config` asks `resolve`, so they all agree.
public struct ConfigLookup: Sendable, Equatable {
    /// Where the path came from, for messages ("from KLAXON_CONFIG").
    public enum Origin: String, Sendable, Equatable {
        case flag, environment, system
    }

    /// The environment variable naming the config file.
    public static let environmentVariable = "KLAXON_CONFIG"
    /// The system-wide config, read when neither `--config` nor `KLAXON_CONFIG` names one.
    public static let systemPath = "/etc/klaxon/klaxon.yaml"

    public var path: String
    public var origin: Origin

    public init(path: String, origin: Origin) {
        self.path = path
        self.origin = origin
    }

    /// `--config PATH`, `KLAXON_CONFIG=PATH` or `/etc/klaxon/klaxon.yaml`.
    public var source: String {
        switch origin {
        case .flag: "--config"
        case .environment: Self.environmentVariable
        case .system: Self.systemPath
        }
    }

    /// The config to read: `flag` (`--config`), else `environment[KLAXON_CONFIG]` (an empty value counts
    /// as unset), else `systemPath` if a file is there; nil when none applies. A path given by the flag or
    /// the variable is returned whether or not it exists: loading it then says it is missing, rather
    /// than quietly falling back to another file.
    public static func resolve(
        flag: String?, environment: [String: String] = ProcessInfo.processInfo.environment,
        systemPath: String = systemPath, fileExists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) }
    ) -> ConfigLookup? {
        if let flag { return ConfigLookup(path: flag, origin: .flag) }
        if let value = environment[environmentVariable], !value.isEmpty {
            return ConfigLookup(path: value, origin: .environment)
        }
        if fileExists(systemPath) { return ConfigLookup(path: systemPath, origin: .system) }
        return nil
    }

    /// Where the lookup went, for an error when nothing was found.
    public static var searched: String {
        "--config, \(environmentVariable) and \(systemPath)"
    }
}
