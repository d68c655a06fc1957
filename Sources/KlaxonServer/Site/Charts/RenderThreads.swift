import Dispatch
import Foundation
import KlaxonCore
import Synchronization

/// Threads of their own for blocking work (librsvg and cairo, in `SVGRaster`), fed from a bounded
/// queue: at most `threads` jobs run at once, at most `queue` more wait, and a job beyond that is
/// refused at once (`Refusal.busy`), so a burst of requests costs bounded memory and the callers
/// hear "busy" instead of waiting without end.
///
/// The work never runs on the cooperative pool (two threads on this machine): a caller awaits its
/// job's result. Threads start with the first job and end after `idle` with nothing to do, so a
/// process that never renders has none. A caller cancelled while its job waits takes the job out of
/// the queue; one cancelled while its job runs is answered at once, and the job's result dropped.
final class RenderThreads: Sendable {
    enum Refusal: Error, Equatable {
        /// `threads` jobs run and `queue` wait.
        case busy
    }

    let threads: Int
    let queue: Int
    let idle: Duration

    private struct Job {
        var id: UInt64
        var run: @Sendable () -> Void
    }

    private struct State {
        var waiting: [Job] = []
        var running = 0
        var live = 0
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())
    /// One signal per job queued; a thread waits on it (with a timeout: its idle time).
    private let signal = DispatchSemaphore(value: 0)

    init(threads: Int, queue: Int, idle: Duration = .seconds(60)) {
        self.threads = max(1, threads)
        self.queue = max(0, queue)
        self.idle = idle
    }

    /// Jobs running and waiting now.
    var load: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.waiting.count) } }

    /// Runs `work` on one of the threads and returns its result; throws `Refusal.busy` at once when
    /// every thread is taken and the queue is full, and `CancellationError` when the caller is
    /// cancelled first.
    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try Task.checkCancellation()
        let done = OneShot<Result<T, any Error>>()
        let job: @Sendable () -> Void = { done.set(Result { try work() }) }
        let (id, start) = try state.withLock { s -> (UInt64, Bool) in
            guard s.running + s.waiting.count < threads + queue else { throw Refusal.busy }
            s.nextID += 1
            s.waiting.append(Job(id: s.nextID, run: job))
            // A new thread only when every live one is taken.
            let start = s.live < threads && s.live < s.running + s.waiting.count
            if start { s.live += 1 }
            return (s.nextID, start)
        }
        if start {
            let thread = Thread { [self] in loop() }
            thread.name = "klaxon-render"
            thread.start()
        }
        signal.signal()
        return try await withTaskCancellationHandler {
            try await done.value().get()
        } onCancel: {
            state.withLock { s in s.waiting.removeAll { $0.id == id } }
            done.set(.failure(CancellationError()))
        }
    }

    /// A thread's life: take the next job, run it; end after `idle` with none.
    private func loop() {
        let idleNanoseconds =
            Int(idle.components.seconds) * 1_000_000_000 + Int(idle.components.attoseconds / 1_000_000_000)
        while true {
            let woken = signal.wait(timeout: .now() + .nanoseconds(idleNanoseconds)) == .success
            let job: Job? = state.withLock { s in
                guard !s.waiting.isEmpty else {
                    // A signal for a job a cancelled caller took back, or idle: end unless woken.
                    if !woken { s.live -= 1 }
                    return nil
                }
                s.running += 1
                return s.waiting.removeFirst()
            }
            guard let job else {
                if woken { continue }
                return
            }
            job.run()
            state.withLock { $0.running -= 1 }
        }
    }
}
