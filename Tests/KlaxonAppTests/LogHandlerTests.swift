import Foundation
import KlaxonApp
import KlaxonCore
import Logging
import Synchronization
import Testing

/// Collects the lines a `KlaxonLogHandler` writes, at a fixed time.
final class LineSink: Sendable {
    let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    var text: String { all.joined() }

    /// 2026-11-28T01:02:03.456Z
    static let time: Int64 = 1_795_827_723_456

    func logger(
        _ label: String = "klaxon", format: LogFormat = .logfmt, journal: Bool = false, level: Logger.Level = .trace
    ) -> Logger {
        let output = LogOutput { line in self.lines.withLock { $0.append(line) } }
        let settings = LogSettings(format: format, level: level, journal: journal)
        return Logger(label: label) {
            KlaxonLogHandler(label: $0, settings: settings, output: output, clock: { LineSink.time })
        }
    }
}

@Suite("the log handler: logfmt, JSON and journald lines, byte for byte")
struct LogHandlerTests {
    @Test("logfmt: time, level, msg first; metadata sorted; bare values bare")
    func logfmtBasics() {
        let sink = LineSink()
        sink.logger().info("klaxon running", metadata: ["sources": "3", "listen": "127.0.0.1:9464", "rules": "12"])
        #expect(
            sink.all == [
                "time=2026-11-28T01:02:03.456Z level=info msg=\"klaxon running\" listen=127.0.0.1:9464 rules=12 sources=3\n"
            ])
    }

    @Test("logfmt: quoting and escaping of every awkward value")
    func logfmtQuoting() {
        let sink = LineSink()
        sink.logger().warning(
            "fetched",
            metadata: [
                "a_empty": "", "b_space": "two words", "c_equals": "a=b", "d_quote": #"say "hi""#,
                "e_newline": "line1\nline2\r\n", "f_tab": "a\tb", "g_backslash": #"C:\dir"#,
                "h_backslash_spaced": #"C:\my dir"#, "i_unicode": "Zürich→東京🌊", "j_esc": "\u{1B}[31mred\u{1B}[0m",
                "k_nul": "a\u{0}b", "l_del": "x\u{7F}y", "m_csi": "x\u{9B}31my",
            ])
        let expected =
            #"time=2026-11-28T01:02:03.456Z level=warning msg=fetched a_empty="" b_space="two words" c_equals="a=b" "#
            + #"d_quote="say \"hi\"" e_newline="line1\nline2\r\n" f_tab="a\tb" g_backslash=C:\dir "#
            + #"h_backslash_spaced="C:\\my dir" i_unicode=Zürich→東京🌊 j_esc="\u001b[31mred\u001b[0m" "#
            + #"k_nul="a\u0000b" l_del="x\u007fy" m_csi="x\u009b31my""# + "\n"
        #expect(sink.text == expected)
        // One line, and no byte a terminal would act on.
        #expect(sink.text.filter { $0 == "\n" }.count == 1)
        #expect(
            !sink.text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" || (0x7F...0x9F).contains($0.value) })
    }

    @Test("logfmt: a message with newlines and escapes stays on one line")
    func hostileMessage() {
        let sink = LineSink()
        sink.logger().error("evil\nlevel=critical msg=forged \u{1B}]0;title\u{07}")
        #expect(
            sink.text
                == #"time=2026-11-28T01:02:03.456Z level=error msg="evil\nlevel=critical msg=forged \u001b]0;title\u0007""#
                + "\n")
    }

    @Test("logfmt: keys sanitized, reserved keys kept apart, the logger's label, nested metadata flattened")
    func keysAndNesting() {
        let sink = LineSink()
        sink.logger("klaxon.store").notice(
            "m",
            metadata: [
                "bad key=\"x\"": "1", "msg": "shadow", "": "empty key",
                "nested": ["b": "2", "a": ["z": "deep"]], "list": ["x", "y z", "3"],
            ])
        #expect(
            sink.text
                == #"time=2026-11-28T01:02:03.456Z level=notice msg=m logger=klaxon.store _="empty key" bad_key__x_=1 "#
                + #"list="[x, y z, 3]" meta.msg=shadow nested.a.z=deep nested.b=2"# + "\n")
    }

    @Test("levels: lower-case names; below the logger's level nothing is written")
    func levels() {
        let sink = LineSink()
        let logger = sink.logger(level: .trace)
        for level in Logger.Level.allCases { logger.log(level: level, "x") }
        #expect(
            sink.all.map { $0.split(separator: " ")[1] }
                == [
                    "level=trace", "level=debug", "level=info", "level=notice", "level=warning", "level=error",
                    "level=critical",
                ])
        let quiet = LineSink()
        let warn = quiet.logger(level: .warning)
        warn.info("no")
        warn.debug("no")
        warn.warning("yes")
        #expect(quiet.all.count == 1)
    }

    @Test("json: one object per line, time, level, msg first, strings escaped per RFC 8259 (and C1, DEL)")
    func json() throws {
        let sink = LineSink()
        sink.logger("klaxon.dispatch", format: .json).warning(
            "send \"failed\"\n",
            metadata: [
                "receiver": "ops chat", "attempt": "3", "evil": "\u{1B}[2J\u{7F}\u{85}", "nested": ["k": ["v", "1"]],
            ])
        let expected =
            #"{"time":"2026-11-28T01:02:03.456Z","level":"warning","msg":"send \"failed\"\n","logger":"klaxon.dispatch","#
            + #""attempt":"3","evil":"\u001b[2J\u007f\u0085","nested":{"k":["v","1"]},"receiver":"ops chat"}"# + "\n"
        #expect(sink.text == expected)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(sink.text.utf8)) as? [String: Any])
        #expect(object["msg"] as? String == "send \"failed\"\n")
        #expect(object["evil"] as? String == "\u{1B}[2J\u{7F}\u{85}")
    }

    @Test("json: integers, finite numbers and Booleans typed; strings (a number's text too) stay strings")
    func jsonTyped() throws {
        let sink = LineSink()
        sink.logger(format: .json).warning(
            "source failing",
            metadata: [
                "failures": .stringConvertible(1), "big": .stringConvertible(Int64(1) << 40),
                "ratio": .stringConvertible(0.25), "ok": .stringConvertible(true),
                "nan": .stringConvertible(Double.nan),
                "station": "08055000", "list": [.stringConvertible(2), "x"],
            ])
        let expected =
            #"{"time":"2026-11-28T01:02:03.456Z","level":"warning","msg":"source failing","#
            + #""big":1099511627776,"failures":1,"list":[2,"x"],"nan":"nan","ok":true,"ratio":0.25,"#
            + #""station":"08055000"}"# + "\n"
        #expect(sink.text == expected)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sink.text.utf8)) as? [String: Any])
        #expect(object["failures"] as? Int == 1)
        #expect(object["ok"] as? Bool == true)
        // logfmt has no types: the same text either way.
        let plain = LineSink()
        plain.logger().warning(
            "source failing", metadata: ["failures": .stringConvertible(1), "ok": .stringConvertible(true)])
        #expect(plain.text.hasSuffix(" failures=1 ok=true\n"), "\(plain.text)")
    }

    @Test("journald: a <priority> prefix per level and no time (the journal stamps it)")
    func journald() {
        let sink = LineSink()
        let logger = sink.logger(journal: true)
        for level in Logger.Level.allCases { logger.log(level: level, "x", metadata: ["k": "v"]) }
        #expect(
            sink.all == [
                "<7>level=trace msg=x k=v\n", "<7>level=debug msg=x k=v\n", "<6>level=info msg=x k=v\n",
                "<5>level=notice msg=x k=v\n", "<4>level=warning msg=x k=v\n", "<3>level=error msg=x k=v\n",
                "<2>level=critical msg=x k=v\n",
            ])
        let json = LineSink()
        json.logger(format: .json, journal: true).error("down")
        #expect(json.text == #"<3>{"level":"error","msg":"down"}"# + "\n")
    }

    @Test("the logger's own metadata merges under the call's; an attached error is worded")
    func metadataMerge() {
        let sink = LineSink()
        var logger = sink.logger()
        logger[metadataKey: "source"] = "texas"
        logger[metadataKey: "attempt"] = "1"
        logger.info("again", metadata: ["attempt": "2"])
        logger.handler.log(
            event: LogEvent(
                level: .error, message: "stopped", error: CancellationError(), metadata: nil, source: nil,
                file: #fileID, function: #function, line: #line))
        #expect(
            sink.all == [
                "time=2026-11-28T01:02:03.456Z level=info msg=again attempt=2 source=texas\n",
                "time=2026-11-28T01:02:03.456Z level=error msg=stopped attempt=1 error=cancelled source=texas\n",
            ])
    }

    @Test("RFC 3339 times in UTC with milliseconds, before 1970 too")
    func times() {
        #expect(LogLine.rfc3339(ms: 0) == "1970-01-01T00:00:00.000Z")
        #expect(LogLine.rfc3339(ms: 1_795_827_723_456) == "2026-11-28T01:02:03.456Z")
        #expect(LogLine.rfc3339(ms: 1_795_827_723_007) == "2026-11-28T01:02:03.007Z")
        #expect(LogLine.rfc3339(ms: -1) == "1969-12-31T23:59:59.999Z")
    }

    @Test("settings: the flag wins over the environment; bad values are errors naming their origin")
    func settings() throws {
        let env = ["KLAXON_LOG_LEVEL": "debug", "KLAXON_LOG_FORMAT": "json"]
        #expect(try LogSettings.resolve(format: nil, level: nil, environment: [:], journal: false) == LogSettings())
        #expect(
            try LogSettings.resolve(format: nil, level: nil, environment: env, journal: false)
                == LogSettings(format: .json, level: .debug))
        #expect(
            try LogSettings.resolve(format: "logfmt", level: "WARNING", environment: env, journal: false)
                == LogSettings(format: .logfmt, level: .warning))
        #expect(throws: LogSettingsError.self) {
            try LogSettings.resolve(format: nil, level: nil, environment: ["KLAXON_LOG_LEVEL": "loud"])
        }
        do {
            _ = try LogSettings.resolve(format: "xml", level: nil, environment: [:])
        } catch {
            #expect("\(error)" == #"--log-format "xml" is not a log format (logfmt or json)"#)
        }
    }

    @Test("JOURNAL_STREAM matches only the descriptor whose device and inode it names")
    func journalStream() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-journal-\(UUID())").path
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fd = open(path, O_RDONLY)
        #expect(fd >= 0)
        defer { close(fd) }
        var st = stat()
        #expect(fstat(fd, &st) == 0)
        #expect(LogSettings.journalStream("\(st.st_dev):\(st.st_ino)", fd: fd))
        #expect(!LogSettings.journalStream("\(st.st_dev):\(st.st_ino + 1)", fd: fd))
        #expect(!LogSettings.journalStream("\(st.st_dev + 1):\(st.st_ino)", fd: fd))
        #expect(!LogSettings.journalStream("garbage", fd: fd))
        #expect(!LogSettings.journalStream(nil, fd: fd))
        #expect(!LogSettings.journalStream("\(st.st_dev):\(st.st_ino)", fd: -1))
    }

    @Test("errors in words: decoding, cancellation, POSIX, a listen failure")
    func errorWords() throws {
        struct Item: Decodable { var name: String }
        do {
            _ = try JSONDecoder().decode([Item].self, from: Data(#"[{"name":"a"},{"name":3}]"#.utf8))
            Issue.record("decoded")
        } catch {
            #expect(ErrorWords.describe(error).hasPrefix("cannot decode at [1].name: expected String"))
        }
        #expect(ErrorWords.describe(CancellationError()) == "cancelled")
        #expect(ErrorWords.describe(POSIXError(.ECONNREFUSED)) == "connection refused")
        #expect(ErrorWords.errno(EADDRINUSE) == "address already in use")
        #expect(UserError("plain words").description == "plain words")
        #expect(ErrorWords.describe(UserError("plain words")) == "plain words")
    }
}
