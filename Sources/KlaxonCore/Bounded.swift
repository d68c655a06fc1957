import Dispatch
import Synchronization

/// Waits that end. Awaiting an unstructured task's `result` ignores cancellation, and a task group
/// waits for every child at the end of its scope, so neither bounds a wait on something that may
/// never finish (a task that ignores cancellation, a connection that never closes). These resume
/// the caller from whichever comes first, the task's end or a timer (or the caller's cancellation),
/// and abandon the loser: it is never awaited.
public enum Bounded {
    /// The result of `task`, or nil if `limit` passes first (nil limit: no timer) or, with
    /// `orUntilCancelled`, if the calling task is cancelled first. The task is not cancelled here:
    /// the caller decides; a task that never ends is left behind.
    public static func result<T: Sendable, E: Error>(
        of task: Task<T, E>, within limit: Duration?, orUntilCancelled: Bool = false
    ) async -> Result<T, E>? {
        let first = OneShot<Result<T, E>?>()
        // The waiter awaits the task, however long that takes; nobody awaits the waiter.
        Task.detached { first.set(await task.result) }
        let timer = limit.map { limit in
            Task.detached {
                do {
                    try await Task.sleep(for: limit)
                    first.set(nil)
                } catch {
                    // Cancelled: the task ended first.
                }
            }
        }
        defer { timer?.cancel() }
        guard orUntilCancelled else { return await first.value() }
        return await withTaskCancellationHandler {
            await first.value()
        } onCancel: {
            first.set(nil)
        }
    }

    /// Whether `task` ended within `limit`.
    @discardableResult
    public static func wait<T: Sendable, E: Error>(for task: Task<T, E>, within limit: Duration) async -> Bool {
        await result(of: task, within: limit) != nil
    }

    /// Runs `operation` in a task of its own and returns its value; nil if it threw, if `limit`
    /// passed first or if the caller was cancelled first. In the last two cases the operation is
    /// cancelled and left to end on its own.
    public static func value<T: Sendable>(
        within limit: Duration, _ operation: @escaping @Sendable () async throws -> T
    ) async -> T? {
        let task = Task { try await operation() }
        guard let result = await result(of: task, within: limit, orUntilCancelled: true) else {
            task.cancel()
            return nil
        }
        return try? result.get()
    }
}

/// A value set once and awaited by one waiter: the first `set` wins, later ones are ignored. The
/// waiter resumes as soon as a value is set, whoever sets it (a task, a timer, a signal handler).
public final class OneShot<Value: Sendable>: Sendable {
    private enum Slot {
        case empty
        case set(Value)
        case waiting(CheckedContinuation<Value, Never>)
        case taken
    }

    private let slot = Mutex<Slot>(.empty)

    public init() {}

    /// Sets the value unless one was set already; true if this call set it.
    @discardableResult
    public func set(_ value: Value) -> Bool {
        let (first, waiter): (Bool, CheckedContinuation<Value, Never>?) = slot.withLock { slot in
            switch slot {
            case .empty:
                slot = .set(value)
                return (true, nil)
            case .waiting(let continuation):
                slot = .taken
                return (true, continuation)
            case .set, .taken:
                return (false, nil)
            }
        }
        waiter?.resume(returning: value)
        return first
    }

    /// Whether a value has been set.
    public var isSet: Bool {
        slot.withLock { slot in
            if case .empty = slot { return false }
            if case .waiting = slot { return false }
            return true
        }
    }

    /// The value, once it is set. One waiter only. It does not end on cancellation: give the task a
    /// cancellation handler that sets a value, as `Bounded.result` does.
    public func value() async -> Value {
        await withCheckedContinuation { continuation in
            let ready: Value? = slot.withLock { slot in
                switch slot {
                case .empty:
                    slot = .waiting(continuation)
                    return nil
                case .set(let value):
                    slot = .taken
                    return value
                case .waiting, .taken:
                    preconditionFailure("OneShot has one waiter")
                }
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// Where blocking work runs (`offPool`, `releaseFreeMemoryLater`): one place for all of it. The
/// executable hands it to NIO's blocking pool (`NIOThreadPool.singleton`, installed first thing by
/// `BlockingPool.useNIOThreadPool()` in `KlaxonApp`); until a runner is installed, a Dispatch worker
/// runs it. (`KlaxonCore` imports no NIO, hence the hook.)
///
/// The pool has as many threads as cores, maybe one: work handed here must never wait for other
/// work handed here (a parser that fills a queue its consumer empties runs on a thread of its own).
public enum BlockingPool {
    /// Runs `work` exactly once on a thread that may block, and returns without waiting for it.
    public typealias Runner = @Sendable (_ work: @escaping @Sendable () -> Void) -> Void

    private static let installed = Mutex<Runner?>(nil)

    /// From now on, blocking work runs through `runner`.
    public static func install(_ runner: @escaping Runner) { installed.withLock { $0 = runner } }

    /// Hands `work` to the installed runner (a Dispatch worker if none), without waiting for it.
    public static func submit(_ work: @escaping @Sendable () -> Void) {
        if let runner = installed.withLock({ $0 }) {
            runner(work)
        } else {
            DispatchQueue.global().async { work() }
        }
    }
}

/// Runs blocking work (a large file, a parse, a wait on a hand-over queue) on the blocking pool
/// (`BlockingPool`) and suspends until it is done, so the cooperative pool's threads stay free for
/// the HTTP server and the other services. The work runs to its end even if the caller is cancelled.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        BlockingPool.submit { continuation.resume(with: Result { try body() }) }
    }
}

/// Hands memory freed by a large piece of work (a big request, evaluation or dispatch pass) back to
/// the system; glibc keeps it otherwise, and a long-running daemon's footprint stays at its peak.
public func releaseFreeMemory() {
    #if os(Linux)
        _ = glibcMallocTrim(0)
    #endif
}

/// `releaseFreeMemory` on the blocking pool, not waited for: the caller answers meanwhile.
public func releaseFreeMemoryLater() { BlockingPool.submit { releaseFreeMemory() } }

/// Caps glibc's malloc arenas (one per thread by default, each holding its own free memory): for a
/// long-running process with many threads and modest allocation, a few are enough.
public func limitMallocArenas(_ count: Int32) {
    #if os(Linux)
        _ = glibcMallopt(-8, count)  // M_ARENA_MAX
    #endif
}

#if os(Linux)
    /// glibc's `malloc_trim` and `mallopt`, which its Swift module does not import.
    @_silgen_name("malloc_trim") private func glibcMallocTrim(_ pad: Int) -> Int32
    @_silgen_name("mallopt") private func glibcMallopt(_ param: Int32, _ value: Int32) -> Int32
#endif
