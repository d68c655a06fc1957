import Foundation
import KlaxonCore

/// A recording of the city AQI WebSocket feed (format name `aqi-frames`), for replaying it through
/// rules: JSON Lines, one received frame per line, in the order received:
///
/// ```
/// {"received": "2025-11-03T10:00:05Z", "frame": [{"city": "Delhi", "aqi": 303.28}, {"city": "Pune", "aqi": 88.1}]}
/// {"received": 1762164035.2, "frame": "[{\"city\": \"Delhi\", \"aqi\": 305.1}]"}
/// ```
///
/// `received` is when the frame arrived: ISO 8601 with `Z` or an offset, or seconds since the epoch
/// (a fraction is dropped). `frame` is the frame as the feed sent it: the JSON array itself, or a
/// string holding the frame's text (for a frame that was not valid JSON). `websocat URL | jq -c
/// --unbuffered '{received: (now | todate), frame: .}'` records one. Blank lines are skipped.
extension AQIFrameParser {
    static let recordingFormat = "aqi-frames"

    /// One frame of a recording, read as `parse(_:receivedAt:)` reads a frame the source receives.
    public struct RecordedFrame: Sendable {
        /// 1-based line of the recording.
        public var line: Int
        public var receivedAt: Int64
        public var readings: [Reading]
        /// Entries without a city or a usable AQI, and repeated cities.
        public var skipped: Int
    }

    /// The frames of a recording, each line read on its own: a line that is not a recorded frame, a
    /// frame the source would have skipped as malformed, a frame longer than `maxFrame` bytes (the
    /// source's `max_frame_bytes`) and a frame received before the line above it are errors of that
    /// line (`ParseError.line` set), and the others are read all the same.
    public static func recording(_ data: Data, maxFrame: Int = 1 << 20) -> [Result<RecordedFrame, ParseError>] {
        var out: [Result<RecordedFrame, ParseError>] = []
        var previous: Int64? = nil
        var lineNumber = 0
        for var line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            guard line.contains(where: { $0 != 0x20 && $0 != 0x09 }) else { continue }
            do {
                let frame = try recordedFrame(Data(line), line: lineNumber, maxFrame: maxFrame)
                if let previous, frame.receivedAt < previous {
                    throw ParseError(
                        .badValue, format: recordingFormat, line: lineNumber,
                        "received \(Timestamp.format(frame.receivedAt)), before the line above "
                            + "(\(Timestamp.format(previous))): a recording is in the order received")
                }
                previous = frame.receivedAt
                out.append(.success(frame))
            } catch let error as ParseError {
                out.append(.failure(error))
            } catch {
                out.append(.failure(ParseError(.malformed, format: recordingFormat, line: lineNumber, "\(error)")))
            }
        }
        return out
    }

    static func recordedFrame(_ line: Data, line number: Int, maxFrame: Int) throws -> RecordedFrame {
        func fail(_ kind: ParseError.Kind, _ message: String) -> ParseError {
            ParseError(kind, format: recordingFormat, line: number, message)
        }
        // The envelope adds little to a frame: a line far longer holds a frame too long to receive.
        guard line.count <= maxFrame + 1_024 else {
            throw fail(.badValue, "the line is longer than a frame may be (\(maxFrame) bytes)")
        }
        let envelope: JSONValue
        do {
            envelope = try JSONInput.decode(JSONValue.self, from: line, format: recordingFormat)
        } catch let error as ParseError {
            throw fail(error.kind, "not a recorded frame: \(error.message)")
        }
        guard case .object(let object) = envelope else {
            throw fail(.notTheFormat, #"the line is not a recorded frame ({"received": …, "frame": […]})"#)
        }
        guard let received = object["received"] else { throw fail(.missingField, "missing field 'received'") }
        let receivedAt: Int64
        switch received {
        case .string(let text):
            guard let t = Timestamp.parse(text.trimmingSpaces()) else {
                throw fail(.badValue, "bad time '\(ParseError.excerpt(text, limit: 40))' in 'received'")
            }
            receivedAt = t
        case .number(let seconds):
            // Years 1800 to 2199, as for any reading: the conversion cannot trap.
            guard seconds.isFinite, seconds >= -5_364_662_400, seconds < 7_258_118_400 else {
                throw fail(.badValue, "'received' is out of range")
            }
            receivedAt = Int64(seconds.rounded(.down))
        default:
            throw fail(.badValue, "'received' is not a time (ISO 8601 or seconds since the epoch)")
        }
        guard let frameValue = object["frame"] else { throw fail(.missingField, "missing field 'frame'") }
        var frame = frameValue
        if case .string(let text) = frameValue {
            guard text.utf8.count <= maxFrame else {
                throw fail(.badValue, "the frame is longer than \(maxFrame) bytes")
            }
            do {
                frame = try JSONInput.decode(JSONValue.self, from: Data(text.utf8), format: format)
            } catch let error as ParseError {
                throw fail(error.kind, "\(format): \(error.message)")
            }
        }
        do {
            let (readings, skipped) = try parse(frame, receivedAt: receivedAt)
            return RecordedFrame(line: number, receivedAt: receivedAt, readings: readings, skipped: skipped)
        } catch let error as ParseError {
            throw fail(error.kind, "\(format): \(error.message)")
        }
    }
}
