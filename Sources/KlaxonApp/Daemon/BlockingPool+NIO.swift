import KlaxonCore
import NIOPosix

extension BlockingPool {
    /// From now on, blocking work (`offPool`) runs on NIO's blocking pool, `NIOThreadPool.singleton`
    /// (threads `SGLTN-TP-#N`, as many as cores), not on Dispatch's global queue. The executable calls
    /// this first thing. Each piece of work runs to its end, as it did on a Dispatch worker: awaiting
    /// it is not cancellable (`runIfActive` would skip work whose caller was cancelled meanwhile).
    public static func useNIOThreadPool() {
        install { work in NIOThreadPool.singleton.submit { _ in work() } }
    }
}
