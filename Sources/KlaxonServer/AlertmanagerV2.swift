import Foundation
import KlaxonCore

/// Alertmanager's API v2 schemas (`api/v2/openapi.yaml` of Alertmanager 0.25, the version
/// `Tests/Fixtures/peers/alertmanager` was recorded from), written by hand as Codable types: the
/// fields Klaxon sends and takes, with Alertmanager's names. Later Alertmanagers add optional fields
/// (`routeLabels`, a silence's `annotations`, a receiver's `labels`) that Klaxon does not send.
/// Encoded with `AlertmanagerV2.encode` (sorted keys, `/` unescaped, times with milliseconds).
enum AlertmanagerV2 {
    /// `labelSet`: label names to values.
    typealias LabelSet = [String: String]

    /// A `date-time` as Alertmanager writes it: RFC 3339 with milliseconds, `2026-11-27T12:00:17.000Z`
    /// (Klaxon keeps whole seconds).
    struct DateTime: Codable, Sendable, Equatable {
        var seconds: Int64

        init(_ seconds: Int64) { self.seconds = seconds }

        var text: String { String(Timestamp.format(seconds).dropLast()) + ".000Z" }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            try c.encode(text)
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            guard let t = Timestamp.parse(try c.decode(String.self)) else {
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "not a date-time")
            }
            seconds = t
        }
    }

    /// `receiverReference` (and `receiver`, the same in 0.25): a receiver by name.
    struct Receiver: Codable, Sendable, Equatable {
        var name: String
    }

    /// `alertStatus`.
    struct AlertStatus: Codable, Sendable, Equatable {
        /// `unprocessed`, `active` or `suppressed`.
        var state: String
        var silencedBy: [String]
        var inhibitedBy: [String]
        var mutedBy: [String]
    }

    /// `gettableAlert`.
    struct GettableAlert: Codable, Sendable, Equatable {
        var annotations: LabelSet
        var endsAt: DateTime
        var fingerprint: String
        /// Left out when nil (`format: uri`, optional).
        var generatorURL: String?
        var labels: LabelSet
        var receivers: [Receiver]
        var startsAt: DateTime
        var status: AlertStatus
        var updatedAt: DateTime
    }

    /// `alertGroup` (without `routeLabels`, which came after 0.25).
    struct AlertGroup: Codable, Sendable, Equatable {
        var alerts: [GettableAlert]
        var labels: LabelSet
        var receiver: Receiver
    }

    /// `matcher`: `isEqual` defaults to true.
    struct Matcher: Codable, Sendable, Equatable {
        var isEqual: Bool?
        var isRegex: Bool
        var name: String
        var value: String

        init(name: String, value: String, isRegex: Bool, isEqual: Bool?) {
            self.name = name
            self.value = value
            self.isRegex = isRegex
            self.isEqual = isEqual
        }

        /// Klaxon's matcher as Alertmanager's (`isEqual` always written).
        init(_ m: KlaxonCore.Matcher) {
            self.init(
                name: m.name, value: m.value, isRegex: m.op == .regex || m.op == .notRegex,
                isEqual: m.op == .equal || m.op == .regex)
        }

        enum CodingKeys: String, CodingKey { case isEqual, isRegex, name, value }

        /// Read as Alertmanager's swagger checks a matcher, with its words: each refusal names the
        /// field (`name is required`, `isEqual must be of type boolean`).
        init(from decoder: any Decoder) throws {
            guard let c = try? decoder.container(keyedBy: CodingKeys.self) else {
                throw Refusal("a matcher must be an object")
            }
            guard let name = try? c.decode(String.self, forKey: .name) else { throw Refusal("name is required") }
            guard let value = try? c.decode(String.self, forKey: .value) else { throw Refusal("value is required") }
            guard let isRegex = try? c.decode(Bool.self, forKey: .isRegex) else {
                throw Refusal("isRegex is required")
            }
            var isEqual: Bool? = nil
            if c.contains(.isEqual), !((try? c.decodeNil(forKey: .isEqual)) ?? false) {
                guard let b = try? c.decode(Bool.self, forKey: .isEqual) else {
                    throw Refusal("isEqual must be of type boolean")
                }
                isEqual = b
            }
            self.init(name: name, value: value, isRegex: isRegex, isEqual: isEqual)
        }
    }

    /// `silenceStatus`: `expired`, `active` or `pending`.
    struct SilenceStatus: Codable, Sendable, Equatable {
        var state: String
    }

    /// `gettableSilence`.
    struct GettableSilence: Codable, Sendable, Equatable {
        var comment: String
        var createdBy: String
        var endsAt: DateTime
        var id: String
        var matchers: [Matcher]
        var startsAt: DateTime
        var status: SilenceStatus
        var updatedAt: DateTime
    }

    /// `postableSilence`, read with Alertmanager's swagger checks and words: the required fields
    /// (null counts as given, and then fails its type), their types, 1 to `AlertmanagerAPI.maxMatchers`
    /// matchers.
    /// What the fields mean (a matcher's regex, the times) is checked after (`AlertmanagerAPI.PostedSilence`).
    struct PostableSilence: Decodable, Sendable {
        var id: String?
        var matchers: [Matcher]
        var startsAt: Int64
        var endsAt: Int64
        var createdBy: String
        var comment: String

        enum CodingKeys: String, CodingKey { case id, matchers, startsAt, endsAt, createdBy, comment }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            for key in [CodingKeys.matchers, .startsAt, .endsAt, .createdBy, .comment] where !c.contains(key) {
                throw Refusal("\(key.stringValue) in body is required")
            }
            id = nil
            if c.contains(.id), !((try? c.decodeNil(forKey: .id)) ?? false) {
                guard let text = try? c.decode(String.self, forKey: .id) else {
                    throw Refusal("id in body must be of type string")
                }
                if !text.isEmpty { id = text }
            }
            guard let createdBy = try? c.decode(String.self, forKey: .createdBy) else {
                throw Refusal("createdBy in body must be of type string")
            }
            guard let comment = try? c.decode(String.self, forKey: .comment) else {
                throw Refusal("comment in body must be of type string")
            }
            self.createdBy = createdBy
            self.comment = comment
            guard let starts = try? c.decode(DateTime.self, forKey: .startsAt) else {
                throw Refusal("startsAt in body must be of type date-time")
            }
            guard let ends = try? c.decode(DateTime.self, forKey: .endsAt) else {
                throw Refusal("endsAt in body must be of type date-time")
            }
            startsAt = starts.seconds
            endsAt = ends.seconds
            guard var list = try? c.nestedUnkeyedContainer(forKey: .matchers), let count = list.count, count > 0
            else {
                throw Refusal("matchers in body should have at least 1 items")
            }
            guard count <= AlertmanagerAPI.maxMatchers else {
                throw Refusal("matchers in body should have at most \(AlertmanagerAPI.maxMatchers) items")
            }
            var matchers: [Matcher] = []
            while !list.isAtEnd {
                do {
                    matchers.append(try list.decode(Matcher.self))
                } catch let e as Refusal {
                    throw Refusal("silence invalid: invalid label matcher \(matchers.count): \(e.message)")
                }
            }
            self.matchers = matchers
        }

        /// A body as Alertmanager's swagger reads it: the refusal says why it is not one.
        static func decode(_ data: Data) -> Result<PostableSilence, Refusal> {
            do {
                return .success(try JSONDecoder().decode(PostableSilence.self, from: data))
            } catch let refusal as Refusal {
                return .failure(refusal)
            } catch DecodingError.typeMismatch(_, _) where data.first(where: { !jsonSpace.contains($0) }) == 0x5B {
                // An array: JSON, but not an object. A bare string or number is not JSON here (as
                // `JSONSerialization` without fragments had it).
                return .failure(Refusal("parsing silence body from \"\" failed, because the body is not an object"))
            } catch {
                return .failure(Refusal("parsing silence body from \"\" failed, because the body is not JSON"))
            }
        }

        /// JSON's whitespace: space, tab, line feed, carriage return.
        static let jsonSpace: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
    }

    /// `postSilencesOKBody`.
    struct SilenceCreated: Codable, Sendable, Equatable {
        var silenceID: String
    }

    /// `alertmanagerStatus`.
    struct AlertmanagerStatus: Codable, Sendable, Equatable {
        var cluster: ClusterStatus
        var config: AlertmanagerConfig
        var uptime: DateTime
        var versionInfo: VersionInfo
    }

    /// `clusterStatus` (Klaxon has no cluster: `disabled`, no peers).
    struct ClusterStatus: Codable, Sendable, Equatable {
        var peers: [PeerStatus]
        var status: String
    }

    /// `peerStatus`.
    struct PeerStatus: Codable, Sendable, Equatable {
        var address: String
        var name: String
    }

    /// `alertmanagerConfig`: the configuration as YAML.
    struct AlertmanagerConfig: Codable, Sendable, Equatable {
        var original: String
    }

    /// `versionInfo`.
    struct VersionInfo: Codable, Sendable, Equatable {
        var branch: String
        var buildDate: String
        var buildUser: String
        var goVersion: String
        var revision: String
        var version: String
    }

    /// Why a request was refused: Alertmanager's words.
    struct Refusal: Error, Sendable {
        var message: String
        init(_ message: String) { self.message = message }
    }

    /// The JSON of an answer as the API has always written it: keys sorted, `/` not escaped, no
    /// space or newline (`APIJSON`).
    static func encode(_ value: some Encodable) -> Data { APIJSON.encode(value) }
}
