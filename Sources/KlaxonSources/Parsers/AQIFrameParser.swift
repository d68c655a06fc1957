import Foundation
import KlaxonCore

/// One frame of the city AQI WebSocket feed (`ws://city-ws.herokuapp.com`): a JSON array of
/// `{"city": String, "aqi": Double}` for a varying subset of cities, with no time of its own.
///
/// Each entry becomes a reading `aqi` (unrounded, as sent, on the scale the feed uses — the Indian
/// cities it carries suggest `india-naqi`) at station `city`, stamped with the time the caller
/// received the frame. An entry without a non-empty `city` or a numeric `aqi`, or with a negative
/// or non-finite `aqi`, is skipped and counted; so is an earlier entry for a city the frame repeats
/// (the last one wins, as it would in a client's per-city table).
public enum AQIFrameParser {
    static let format = "aqi-websocket"
    static let source = "aqi-websocket"

    /// The frame's readings and how many entries were skipped. `receivedAt` is the receive time in
    /// UTC seconds. A frame that is not a JSON array of objects is a `ParseError`.
    public static func parse(_ data: Data, receivedAt: Int64) throws -> (readings: [Reading], skipped: Int) {
        try parse(JSONInput.decode(JSONValue.self, from: data, format: format), receivedAt: receivedAt)
    }

    /// The same for a frame already decoded.
    static func parse(_ root: JSONValue, receivedAt: Int64) throws -> (readings: [Reading], skipped: Int) {
        guard case .array(let entries) = root else {
            throw ParseError(.malformed, format: format, "the frame is not a JSON array of objects")
        }
        var readings: [Reading] = []
        var position: [String: Int] = [:]
        var skipped = 0
        for (index, entry) in entries.enumerated() {
            guard case .object(let object) = entry else {
                throw ParseError(.malformed, format: format, "the frame is not a JSON array of objects ([\(index)])")
            }
            guard let city = object["city"]?.string?.trimmingSpaces(), !city.isEmpty,
                let aqi = object["aqi"]?.number, aqi.isFinite, aqi >= 0
            else {
                skipped += 1
                continue
            }
            let reading = Reading(station: city, metric: "aqi", time: receivedAt, value: aqi, source: source)
            if let at = position[city] {
                readings[at] = reading
                skipped += 1
            } else {
                position[city] = readings.count
                readings.append(reading)
            }
        }
        return (readings, skipped)
    }
}
