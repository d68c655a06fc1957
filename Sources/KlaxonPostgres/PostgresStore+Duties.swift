import Foundation
import KlaxonCore
import KlaxonStore
import Logging
import PostgresNIO
import Synchronization

extension PostgresStore {
    /// How often a held duty's connection is asked whether it is still there.
    static let dutyCheck = Duration.seconds(2)

    public var sharesDuties: Bool { true }

    /// Runs `body` while this process holds `duty`: a session advisory lock taken with
    /// `pg_try_advisory_lock` on a connection leased from the pool for as long as `body` runs (each
    /// duty held keeps one connection). The server frees the lock when that connection ends, so when
    /// a holder dies another process can take the duty at once. While `body` runs the connection is
    /// checked every `dutyCheck`; if it has ended, `body` is cancelled and `DutyLost` thrown.
    /// Nil at once when another process holds the duty.
    public func holding<T: Sendable>(duty: String, _ body: @escaping @Sendable () async throws -> T) async throws
        -> T?
    {
        let key = Self.dutyKey(duty)
        let logger = self.logger
        do {
            return try await client.withConnection { connection -> T? in
                // The server frees a duty when the holder's session ends. A holder that dies with its
                // machine, or behind a partition, sends no FIN: these make the server probe the
                // connection after 5 s of silence and drop it about 11 s in (or when data it sent
                // stays unacknowledged for 10 s), instead of after the system's two hours, so
                // another instance takes over within 15 s. Settings an old server lacks are skipped.
                for setting in Self.dutySessionSettings {
                    _ = try? await connection.query(PostgresQuery(unsafeSQL: setting), logger: logger)
                }
                var got = false
                for try await row in try await connection.query("SELECT pg_try_advisory_lock(\(key))", logger: logger) {
                    got = try row.decode(Bool.self)
                }
                guard got else { return nil }
                let outcome: Result<T, any Error>
                do {
                    outcome = .success(try await Self.run(body, holding: duty, on: connection, logger: logger))
                } catch {
                    outcome = .failure(error)
                }
                // Let go outside any cancellation, and within `dutyCheck` (a silent connection never
                // answers). A connection that cannot confirm it is closed, so the pool never hands
                // out a connection that still holds a duty.
                var released = false
                if !connection.isClosed {
                    released = await Self.first(within: Self.dutyCheck, otherwise: false) {
                        (try? await connection.query("SELECT pg_advisory_unlock(\(key))", logger: logger)) != nil
                    }
                }
                if !released { Task { try? await connection.close() } }
                return try outcome.get()
            }
        } catch let lost as DutyLost {
            throw lost
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw describe(error)
        }
    }

    /// `body`, or `DutyLost` as soon as `connection` closes or leaves its prober unanswered for
    /// `dutySilence`. (A query on a connection whose server has gone silent never returns, so the
    /// check looks at the connection's state, and a prober of its own answers the rest.) On `DutyLost`
    /// the body is cancelled and waited for at most `dutyCheck`: what hangs on the lost connection ends
    /// in its own time, and can no longer change anything.
    static func run<T: Sendable>(
        _ body: @escaping @Sendable () async throws -> T, holding duty: String, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> T {
        let answered = LastAnswer()
        let outcome = OneShot<Result<T, any Error>>()
        let lost = LostMark()
        let work = Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            // Ended because the duty was lost: say so, not "cancelled".
            outcome.set(lost.isSet ? .failure(DutyLost(duty: duty)) : result)
        }
        let prober = Task {
            while !Task.isCancelled {
                if (try? await connection.query("SELECT 1", logger: logger)) != nil { answered.now() }
                try? await Task.sleep(for: dutyCheck)
            }
        }
        let watchdog = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: dutyCheck)
                let silent = ContinuousClock.now - answered.at
                if connection.isClosed || silent > dutySilence {
                    lost.set()
                    work.cancel()
                    // The work's own end answers, once it has seen the cancellation; work that hangs
                    // on the lost connection is not waited for past `dutyCheck`.
                    try? await Task.sleep(for: dutyCheck)
                    outcome.set(.failure(DutyLost(duty: duty)))
                    return
                }
            }
        }
        defer {
            work.cancel()
            prober.cancel()
            watchdog.cancel()
        }
        return try await withTaskCancellationHandler {
            try await outcome.value().get()
        } onCancel: {
            // The caller's cancellation reaches the body; its end (or the watchdog's) answers.
            work.cancel()
        }
    }

    /// Session settings of a duty's connection (see `holding`): TCP keepalives and a user timeout on
    /// the server's side of it.
    static let dutySessionSettings = [
        "SET tcp_keepalives_idle = 5", "SET tcp_keepalives_interval = 2", "SET tcp_keepalives_count = 3",
        "SET tcp_user_timeout = 10000",
    ]

    /// How long a held duty's connection may leave the prober unanswered before the duty counts as
    /// lost (a network gone quiet: the server frees the lock when it notices, too).
    static let dutySilence = Duration.seconds(15)

    /// The advisory lock key of a duty: a stable 64-bit FNV-1a hash of `klaxon-duty:NAME`, the same in
    /// every process and version.
    public static func dutyKey(_ duty: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "klaxon-duty:\(duty)".utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }
}

/// When a duty's connection last answered its prober.
final class LastAnswer: Sendable {
    private let instant = Mutex(ContinuousClock.now)
    func now() { instant.withLock { $0 = .now } }
    var at: ContinuousClock.Instant { instant.withLock { $0 } }
}

/// Set once a duty is found lost, so its work's end reports the loss rather than a cancellation.
final class LostMark: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
