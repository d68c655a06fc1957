import Dispatch
import Foundation
import KlaxonApp
import KlaxonCore
import Synchronization

/// The bound on a stop of `klaxon run` and `klaxon demo`. The daemon stops gracefully on the first
/// SIGTERM or SIGINT (and returns within 17 s whatever its services do); if the process has still
/// not exited `limit` seconds after that signal, it exits here, with status 128 + the signal. A
/// second signal exits at once (130 for Ctrl-C). SIGHUP never ends it.
///
/// The watch lasts the whole process: once libdispatch has watched a signal, the signal no longer
/// ends a process by default (see `SignalWatch`), so a process that stopped watching would ignore
/// every later SIGTERM and Ctrl-C.
enum StopWatchdog {
    /// Seconds from the first signal to a forced exit.
    static let limit = 19.0

    /// The watches, kept for the life of the process.
    private static let watch = Mutex<[SignalWatch]>([])

    static func install() async {
        let first = OneShot<Int32>()
        let started = await SignalWatch.start([SIGTERM, SIGINT]) { signo in
            let name = SignalWatch.name(signo)
            guard first.set(signo) else {
                say("klaxon: \(name) again; exiting now\n")
                _exit(128 + signo)
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + limit) {
                say("klaxon: still not stopped \(Int(limit)) s after \(name); exiting\n")
                _exit(128 + signo)
            }
        }
        // SIGHUP would end the process by default (and logrotate sends it): it is watched for good,
        // so it never does. While the daemon runs, the daemon logs it; before and after, this does.
        let hangups = await SignalWatch.start([SIGHUP], stops: false) { _ in
            if SignalWatch.watches(of: SIGHUP) <= 1 {
                say("klaxon: SIGHUP received while no daemon runs; nothing to reload, carrying on\n")
            }
        }
        watch.withLock { $0 = [started, hangups] }
    }

    /// Writes to stderr only if that cannot block: the exit must not wait on a full pipe.
    static func say(_ text: String) {
        var ready = pollfd(fd: 2, events: Int16(POLLOUT), revents: 0)
        guard poll(&ready, 1, 0) == 1 else { return }
        _ = text.withCString { write(2, $0, strlen($0)) }
    }
}
