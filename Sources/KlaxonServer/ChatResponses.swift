import Foundation
import Logging
import ServiceLifecycle

/// The work a chat button press leaves after its request was answered: act on it, then post the
/// result to the press's `response_url` (Slack wants the request answered within 3 seconds, and
/// the result may take longer). Two bounded stages drained by a service of the HTTP application:
/// the actions, a few at a time, and the posts, a few at a time on their own, each with a small
/// bounded retry. A slow or hanging `response_url` holds only post slots: every later press is
/// still acted on at once (issue 38), and its answer waits for a post slot, or is dropped with a
/// warning when too many answers wait. Nothing here blocks a request.
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
    /// Jobs (actions) run at once at most.
    static let inFlight = 4
    /// Answers waiting for a post at most; one more is dropped with a warning (its action was taken).
    static let postCapacity = 256
    /// Posts run at once at most.
    static let postsInFlight = 4
    /// Tries per post at most (a connection error, a timeout, 408, 429 or 5xx is tried again).
    static let attempts = 3

    let post: Post?
    let logger: Logger
    /// Seconds before a second and a third try.
    let backoff: [Double]
    private let stream: AsyncStream<Job>
    private let continuation: AsyncStream<Job>.Continuation
    private let replies: AsyncStream<Reply>
    private let replyContinuation: AsyncStream<Reply>.Continuation

    init(post: Post?, logger: Logger, backoff: [Double] = [0.5, 2]) {
        self.post = post
        self.logger = logger
        self.backoff = backoff
        (stream, continuation) = AsyncStream.makeStream(of: Job.self, bufferingPolicy: .bufferingOldest(Self.capacity))
        (replies, replyContinuation) = AsyncStream.makeStream(
            of: Reply.self, bufferingPolicy: .bufferingOldest(Self.postCapacity))
    }

    /// Queues `job`; false when the queue is full.
    func enqueue(_ job: @escaping Job) -> Bool {
        if case .enqueued = continuation.yield(job) { return true }
        return false
    }

    public func run() async throws {
        // On shutdown, what is still queued is dropped: the actions were not taken, the presses
        // were answered, and Slack's response_url stays valid for 30 minutes.
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { stages in
                stages.addTask { await Self.drain(self.stream, inFlight: Self.inFlight) { await self.act($0) } }
                stages.addTask {
                    await Self.drain(self.replies, inFlight: Self.postsInFlight) { await self.answer($0) }
                }
            }
        }
    }

    /// Runs `work` on each element of `stream`, at most `inFlight` at once.
    static func drain<T: Sendable>(
        _ stream: AsyncStream<T>, inFlight: Int, _ work: @escaping @Sendable (T) async -> Void
    ) async {
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            for await item in stream {
                if running >= inFlight {
                    await group.next()
                    running -= 1
                }
                group.addTask { await work(item) }
                running += 1
            }
        }
    }

    /// Takes the action, then hands its answer to the post stage, never waiting for a post.
    func act(_ job: Job) async {
        guard let reply = await job() else { return }
        if case .enqueued = replyContinuation.yield(reply) { return }
        logger.warning(
            "too many chat answers waiting; one dropped (its action was taken)",
            metadata: ["host": "\(Self.host(reply.url))"])
    }

    /// Posts `reply`, trying again a bounded number of times.
    func answer(_ reply: Reply) async {
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
                    metadata: [
                        "host": "\(Self.host(reply.url))", "attempt": .stringConvertible(attempt),
                        "error": "\(outcome)",
                    ])
                return
            }
            let wait = backoff[min(attempt - 1, backoff.count - 1)]
            do { try await Task.sleep(for: .milliseconds(Int64(wait * 1000))) } catch { return }
        }
    }

    /// A response URL is a capability: only its host is ever logged.
    static func host(_ url: String) -> String { URL(string: url)?.host ?? "?" }
}
