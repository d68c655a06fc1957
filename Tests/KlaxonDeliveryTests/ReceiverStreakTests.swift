import KlaxonCore
import KlaxonDelivery
import Logging
import Testing

@Suite("a receiver's run of failed sends: one warning per change, reasons from a closed set")
struct ReceiverStreakTests {
    static func error(_ kind: DeliveryError.Kind) -> DeliveryError {
        DeliveryError(kind: kind, retryable: true, message: "receiver hook: \(kind)")
    }

    @Test("failing once, again only when the reason changes, recovered once; every other failure silent")
    func lines() throws {
        var streak = ReceiverStreak()
        var lines: [ReceiverStreak.Line?] = []
        for attempt in 1...5 {
            lines.append(
                streak.failed(
                    receiver: "hook", integration: "slack", error: Self.error(.httpStatus(500)), attempt: attempt,
                    at: 1_000))
        }
        lines.append(
            streak.failed(receiver: "hook", integration: "slack", error: Self.error(.timeout), attempt: 6, at: 1_060))
        lines.append(
            streak.failed(receiver: "hook", integration: "slack", error: Self.error(.timeout), attempt: 7, at: 1_120))
        let said = lines.compactMap { $0 }
        #expect(said.map(\.message) == ["receiver failing", "receiver still failing"])
        #expect(said.allSatisfy { $0.level == .warning })
        #expect(said[0].metadata["reason"] == "serverError")
        #expect(said[0].metadata["attempt"] == .stringConvertible(1))
        #expect(said[1].metadata["reason"] == "timeout")
        #expect(said[1].metadata["failures"] == .stringConvertible(6))
        let line = streak.succeeded(receiver: "hook", integration: "slack")
        let recovered = try #require(line)
        #expect(recovered.message == "receiver recovered")
        #expect(recovered.level == .warning)
        #expect(recovered.metadata["failures"] == .stringConvertible(7))
        #expect(recovered.metadata["last_reason"] == "timeout")
        #expect(streak == ReceiverStreak())
        let again = streak.succeeded(receiver: "hook", integration: "slack")
        #expect(again == nil)
    }

    @Test("reasons: HTTP 4xx client, 5xx server, SMTP the other way round, timeouts and connections apart")
    func reasons() {
        let cases: [(DeliveryError.Kind, String)] = [
            (.httpStatus(404), "clientError"), (.httpStatus(429), "clientError"), (.httpStatus(503), "serverError"),
            (.httpStatus(302), "other"), (.smtp(451), "serverError"), (.smtp(550), "clientError"),
            (.timeout, "timeout"), (.connection, "connection"), (.rendering, "other"), (.configuration, "other"),
        ]
        for (kind, reason) in cases {
            #expect(Self.error(kind).failureReason.rawValue == reason)
            #expect(DeliveryFailureReason(rawValue: reason) != nil)
        }
    }
}
