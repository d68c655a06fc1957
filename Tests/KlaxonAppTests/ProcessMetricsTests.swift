import Foundation
import KlaxonServer
import Testing

/// The `/proc` parsers behind `process_*`: fixture strings, hostile command names, and a parse
/// failure leaving the series out.
@Suite("process metrics")
struct ProcessMetricsTests {
    /// A real line's shape (Linux 6.x, 52 fields): utime 14, stime 15, starttime 22, vsize 23, rss 24.
    static func stat(comm: String) -> String {
        "4242 (\(comm)) S 1 4242 4242 0 -1 4194560 2503 0 0 0 150 50 0 0 20 0 9 0 123456 1073741824 2048 "
            + "18446744073709551615 1 1 0 0 0 0 0 4096 17922 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    }

    @Test("stat: the fields after the last parenthesis, whatever the command name holds")
    func stat() throws {
        for comm in ["klaxon", "klax on", "(klax on) )", ") 1 2 3 (", "x) S 9 9 9"] {
            let s = try #require(ProcessMetrics.parseStat(Self.stat(comm: comm)), "\(comm)")
            #expect(s.utime == 150 && s.stime == 50, "\(comm)")
            #expect(s.startTime == 123456 && s.vsize == 1_073_741_824 && s.rss == 2048, "\(comm)")
        }
    }

    @Test("stat: truncated, without a command, or with words for numbers, is no figure")
    func badStat() {
        #expect(ProcessMetrics.parseStat("") == nil)
        #expect(ProcessMetrics.parseStat("4242 klaxon S 1 2 3") == nil)
        #expect(ProcessMetrics.parseStat("4242 (klaxon) S 1 4242 4242 0 -1 4194560 2503 0 0 0 150") == nil)
        #expect(ProcessMetrics.parseStat(Self.stat(comm: "k").replacingOccurrences(of: " 150 ", with: " x ")) == nil)
    }

    @Test("btime from /proc/stat, the soft open-files limit from /proc/self/limits")
    func bootTimeAndLimits() {
        let procStat = """
            cpu  10132153 290696 3084719 46828483 16683 0 25195 0 0 0
            cpu0 1393280 32966 572056 13343292 6130 0 17875 0 0 0
            intr 1462898 0 0 0
            ctxt 1990473
            btime 1062191376
            processes 2915
            """
        #expect(ProcessMetrics.parseBootTime(procStat) == 1_062_191_376)
        #expect(ProcessMetrics.parseBootTime("cpu 1 2 3\n") == nil)
        let limits = """
            Limit                     Soft Limit           Hard Limit           Units
            Max cpu time              unlimited            unlimited            seconds
            Max open files            1024                 524288               files
            Max locked memory         8388608              8388608              bytes
            """
        #expect(ProcessMetrics.parseMaxFDs(limits) == 1024)
        #expect(
            ProcessMetrics.parseMaxFDs("Max open files            unlimited            unlimited            files")
                == nil)
        #expect(ProcessMetrics.parseMaxFDs("") == nil)
    }

    @Test("the figures: CPU seconds from ticks, RSS from pages, start time from btime; a failed part is left out")
    func figures() {
        let m = ProcessMetrics.make(
            stat: Self.stat(comm: "(klax on) )"), procStat: "btime 1000000000\n",
            limits: "Max open files            1024                 524288               files\n", openFDs: 12,
            ticks: 100, pageSize: 4096)
        #expect(m.cpuSeconds == 2)
        #expect(m.residentBytes == 8_388_608)
        #expect(m.virtualBytes == 1_073_741_824)
        #expect(abs((m.startTime ?? 0) - 1_000_001_234.56) < 1e-6)
        #expect(m.maxFDs == 1024 && m.openFDs == 12)
        var text = ""
        m.emit(into: &text)
        #expect(text.contains("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 2\n"))
        #expect(text.contains("process_resident_memory_bytes 8388608\n"))
        #expect(text.contains("process_start_time_seconds 1000001234.5"))

        let broken = ProcessMetrics.make(
            stat: "garbage", procStat: nil, limits: nil, openFDs: nil, ticks: 100, pageSize: 4096)
        #expect(broken == ProcessMetrics())
        var none = ""
        broken.emit(into: &none)
        #expect(none.isEmpty)
    }

    @Test("this process: every series present and plausible")
    func current() throws {
        let m = ProcessMetrics.current()
        #expect(try #require(m.residentBytes) > 1_048_576)
        #expect(try #require(m.virtualBytes) >= m.residentBytes ?? 0)
        #expect(try #require(m.openFDs) >= 3)
        #expect(try #require(m.maxFDs) >= m.openFDs ?? 0)
        #expect(try #require(m.cpuSeconds) > 0)
        let start = try #require(m.startTime)
        let now = Date().timeIntervalSince1970
        #expect(start <= now + 1 && start > now - 86400, "\(start) vs \(now)")
    }
}
