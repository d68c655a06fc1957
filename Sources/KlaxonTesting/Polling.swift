/// What a test waits for did not come: the thing that should have made it happen is broken.
public struct NotWithin: Error, CustomStringConvertible {
    public var description: String
}

/// Polls `condition` until it holds; throws `NotWithin` if it still does not after `limit`. The
/// limit stands for "broken", never for how fast a machine is: what a test waits for normally comes
/// within milliseconds, or seconds on a loaded machine, so a minute is far past any of that.
public func poll(
    until what: @autoclosure () -> String, within limit: Duration = .seconds(60),
    every period: Duration = .milliseconds(20), isolation: isolated (any Actor)? = #isolation,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while !(try await condition()) {
        guard ContinuousClock.now < deadline else { throw NotWithin(description: "not within \(limit): \(what())") }
        try await Task.sleep(for: period)
    }
}

extension Result where Failure == any Error {
    /// What `body` returned or threw. Lets a test finish its cleanup (stop a server, close a
    /// connection) before it rethrows.
    public init(isolation: isolated (any Actor)? = #isolation, awaiting body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
