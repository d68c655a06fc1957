import Foundation
import KlaxonTesting
import Logging
import Synchronization
import Testing

@testable import KlaxonServer

/// The queue behind chat button presses: actions are taken at once, their answers posted on a
/// bounded path of their own (issue 38).
@Suite("chat responses: act first, answer off the press's path", .timeLimit(.minutes(10)))
struct ChatResponsesTests {
    /// A `response_url` that never answers holds post slots only: every later press is acted on,
    /// and no more posts than `postsInFlight` hang at once.
    @Test func aHangingResponseURLDelaysNoLaterAction() async throws {
        let acted = Mutex(0)
        let posting = Mutex(0)
        var logger = Logger(label: "test.responses")
        logger.logLevel = .critical
        let responses = ChatResponses(
            post: { _, _ in
                posting.withLock { $0 += 1 }
                try await Task.sleep(for: .seconds(24 * 3600))
                return 200
            }, logger: logger)
        let presses = 3 * ChatResponses.inFlight + 1
        for _ in 0..<presses {
            #expect(
                responses.enqueue {
                    acted.withLock { $0 += 1 }
                    return ChatResponses.Reply(url: "https://hooks.slack.com/actions/slow", body: Data("{}".utf8))
                })
        }
        let task = Task { try await responses.run() }
        try await poll(until: "every press acted on (\(acted.withLock { $0 }) of \(presses))") {
            acted.withLock { $0 } == presses
        }
        try await poll(until: "the post slots taken") { posting.withLock { $0 } == ChatResponses.postsInFlight }
        #expect(posting.withLock { $0 } == ChatResponses.postsInFlight)
        task.cancel()
        _ = await task.result
    }

    /// A `response_url` cannot leave the allowed prefix's path through dot segments, however they
    /// are encoded (issue 38).
    @Test func aResponseURLCannotClimbOutOfItsPrefix() {
        let settings = ChatEndpoints.Settings(slackResponseURLPrefixes: ["https://chat.example.org/slack/actions/"])
        for good in [
            "https://chat.example.org/slack/actions/T1/123/abc", "https://chat.example.org/slack/actions/a.b/..c/x",
            "https://chat.example.org/slack/actions/x?next=../y", "https://chat.example.org/slack/actions/%41",
        ] {
            #expect(settings.allowsResponseURL(good), "\(good)")
        }
        for bad in [
            "https://chat.example.org/slack/actions/../../admin", "https://chat.example.org/slack/actions/./../x",
            "https://chat.example.org/slack/actions/%2e%2e/%2e%2e/admin",
            "https://chat.example.org/slack/actions/%2E%2e%2fadmin", "https://chat.example.org/slack/actions/.%2e/x",
            "https://chat.example.org/slack/actions/%252e%252e/x",
            "https://chat.example.org/slack/actions/%25252e%25252e/x",
            "https://chat.example.org/slack/actions/..\\x", "https://chat.example.org/slack/actions/%5c..%5cx",
            "https://chat.example.org/slack/actions/%zz", "https://chat.example.org/slack/actions/..",
            "https://chat.example.org/slack/actions/%2e%2e?x", "https://chat.example.org/slack/actions/%2e%2e#x",
            "https://evil.example/slack/actions/x",
        ] {
            #expect(!settings.allowsResponseURL(bad), "\(bad)")
        }
    }
}
