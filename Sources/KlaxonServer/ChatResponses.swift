import Foundation
import Logging
import ServiceLifecycle

/// The work a chat button press leaves after its request was answered: act on it, then post the
/// result to the press's `response_url` (Slack wants the request answered within 3 seconds, and
/// the result may take longer). A bounded queue drained by a service of the HTTP application, a
/// few jobs at a time; each post has a small bounded retry. Nothing here blocks a request.
public final class ChatResponses: Service, Sendable {
    /// What a job posts: JSON to a checked `response_url`, or nothing.
    public struct Reply: Sendable {
        public var url: String
        public var body: Data
    }

    /// One press's work: acts, and says what to post.
    typealias Job = @Sendable () async -> Reply?

    /// POSTs `body` as JSON to `url` with a deadline of its own and answers the HTTP status (the
    /// app's HTTP client: this module has none). Throws on a connection error or a timeout.
    public typealias Post = @Sendable (_ url: String, _ body: Data) async throws -> Int

    /// Presses waiting at most; one more is refused at once (503), not queued.
    static let capacity = 256
    /// Jobs run at once at most.
    static let inFlight = 4
    /// Tries per post at most (a connection error, a timeout, 408, 429 or 5xx is tried again).
    static let attempts = 3

    let post: Post?
    let logger: Logger
    /// Seconds before a second and a third try.
    let backoff: [Double]
    private let stream: AsyncStream<Job>
    private let continuation: AsyncStream<Job>.Continuation

    init(post: Post?, logger: Logger, backoff: [Double] = [0.5, 2]) {
        self.post = post
        self.logger = logger
        self.backoff = backoff
        (stream, continuation) = AsyncStream.makeStream(of: Job.self, bufferingPolicy: .bufferingOldest(Self.capacity))
    }

    /// Queues `job`; false when the queue is full.
    func enqueue(_ job: @escaping Job) -> Bool {
        if case .enqueued = continuation.yield(job) { return true }
        return false
    }

    public func run() async throws {
        // On shutdown, what is still queued is dropped: the actions were not taken, the presses
        // were answered, and Slack's response_url stays valid for 30 minutes.
        try await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                var running = 0
                for await job in self.stream {
                    if running >= Self.inFlight {
                        await group.next()
                        running -= 1
                    }
                    group.addTask { await self.perform(job) }
                    running += 1
                }
            }
        }
    }

    func perform(_ job: Job) async {
        guard let reply = await job() else { return }
        guard let post else {
            logger.warning("no HTTP client to answer a chat action", metadata: ["host": "\(Self.host(reply.url))"])
            return
        }
        for attempt in 1...Self.attempts {
            var retry: Bool
            var outcome: String
            do {
                let status = try await post(reply.url, reply.body)
                if (200...299).contains(status) { return }
                retry = status == 408 || status == 429 || (500...599).contains(status)
                outcome = "HTTP \(status)"
            } catch is CancellationError {
                return
            } catch {
                retry = true
                outcome = "\(type(of: error))"
            }
            if !retry || attempt == Self.attempts {
                logger.warning(
                    "could not answer a chat action",
                    metadata: ["host": "\(Self.host(reply.url))", "attempt": "\(attempt)", "error": "\(outcome)"])
                return
            }
            let wait = backoff[min(attempt - 1, backoff.count - 1)]
            do { try await Task.sleep(for: .milliseconds(Int64(wait * 1000))) } catch { return }
        }
    }

    /// A response URL is a capability: only its host is ever logged.
    static func host(_ url: String) -> String { URL(string: url)?.host ?? "?" }
}
