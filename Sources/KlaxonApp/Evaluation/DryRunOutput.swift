import Foundation
import KlaxonCore
import KlaxonDelivery

/// `dry-run`'s output in time order (`Transition.outputOrder`, ties in the order they came), in memory
/// that does not grow with the number of transitions: each transition is rendered to its output
/// cells as it comes; a full run of them is sorted and spilled to a temporary file, and the runs are
/// merged when printing. Up to `runSize` transitions never touch the disk.
///
/// The text table keeps its look at any size: the column widths are tracked as rows come, so the
/// merge prints each row padded as if all rows had been held.
public final class DryRunOutput: @unchecked Sendable {
    struct Row {
        var at: Int64
        var seq: Int
        var rule: String
        var station: String
        var metric: String
        /// JSON: the line. Text: the table's cells, then the explanation with `explain`.
        var fields: [String]

        static func less(_ a: Row, _ b: Row) -> Bool {
            if a.at != b.at { return a.at < b.at }
            if a.rule != b.rule { return a.rule < b.rule }
            if a.station != b.station { return a.station < b.station }
            if a.metric != b.metric { return a.metric < b.metric }
            return a.seq < b.seq
        }
    }

    public let format: StdoutNotifier.Format
    public let explain: Bool
    let renderer: MessageRenderer
    let runSize: Int
    private var rows: [Row] = []
    private var runs: [String] = []
    private var widths = DryRunOutput.header.map(\.count)
    public private(set) var count = 0
    /// Rows of these series taken before `discardBefore` are not printed (a series replayed again).
    private var discarded: Set<SeriesKey> = []
    private var discardBefore = 0
    private var nextSeq = 0

    static let header = ["AT", "RULE", "STATION", "METRIC", "STATE", "LEVEL", "VALUE", "MESSAGE"]

    public init(format: StdoutNotifier.Format, explain: Bool, renderer: MessageRenderer, runSize: Int = 50_000) {
        self.format = format
        self.explain = explain
        self.renderer = renderer
        self.runSize = max(1, runSize)
    }

    deinit { removeRuns() }

    /// What the replaying thread hands the rendering thread, in order.
    enum Message: Sendable {
        case add([Transition])
        case discard(Set<SeriesKey>)
    }

    /// The rendering thread while one runs (`beginBackground`): its inbox, its end, and the
    /// transitions not yet handed over. Touched only by the thread that adds.
    private var background: (inbox: BatchQueue<Message>, ended: BatchQueue<Bool>, pending: [Transition])?
    /// What stopped the rendering thread, if anything; read after it has ended.
    private var backgroundError: (any Error)?

    /// From now until `endBackground()`, transitions are rendered and spilled on a thread of their own
    /// while the caller goes on replaying: on two cores a large replay's evaluation and its output
    /// overlap. Call both, and `add` and `discard` in between, from one thread that may block (not
    /// the cooperative pool): a full inbox waits for the renderer.
    public func beginBackground() {
        guard background == nil else { return }
        let inbox = BatchQueue<Message>(depth: 8)
        let ended = BatchQueue<Bool>(depth: 1)
        let thread = Thread { [self] in
            do {
                while let message = inbox.take() {
                    switch message {
                    case .add(let transitions): for t in transitions { try render(t) }
                    case .discard(let series): forget(series)
                    }
                }
            } catch {
                backgroundError = error
                inbox.cancel()
            }
            ended.put(true)
            ended.finish(error: nil)
        }
        thread.stackSize = 1 << 20
        thread.start()
        background = (inbox, ended, [])
    }

    /// Hands over what is pending, waits until the rendering thread has taken everything, and ends
    /// it; rethrows what stopped it. Later calls of `add` render at once, on the caller's thread.
    public func endBackground() throws {
        guard let b = background else { return }
        if !b.pending.isEmpty { b.inbox.put(.add(b.pending)) }
        b.inbox.finish(error: nil)
        _ = b.ended.take()
        background = nil
        if let error = backgroundError { throw error }
    }

    /// Takes one transition, in any order.
    public func add(_ t: Transition) throws {
        guard background != nil else { return try render(t) }
        background!.pending.append(t)
        guard background!.pending.count >= 1024 else { return }
        let batch = background!.pending
        background!.pending.removeAll(keepingCapacity: true)
        if !background!.inbox.put(.add(batch)) {
            // The renderer stopped (a spill could not be written): end it and say why.
            try endBackground()
        }
    }

    /// Renders one transition into a row, spilling a full run.
    private func render(_ t: Transition) throws {
        let fields: [String]
        if format == .json {
            fields = [StdoutNotifier.jsonLine(t, message: renderer.render(t), explain: explain, details: false)]
        } else {
            var cells = DryRunPrinter.cells(t, renderer: renderer)
            for i in cells.indices where i < widths.count - 1 { widths[i] = max(widths[i], cells[i].count) }
            if explain {
                // The `why:` line, then the `engine:` line when there is one: two lines, as the table prints.
                cells.append(t.explanation)
                if !t.details.isEmpty { cells.append(t.details) }
            }
            fields = cells
        }
        rows.append(Row(at: t.at, seq: nextSeq, rule: t.rule, station: t.station, metric: t.metric, fields: fields))
        nextSeq += 1
        count += 1
        if rows.count >= runSize { try spill() }
    }

    /// Forgets what was taken so far for these series (`DryRun` replays them again, sorted).
    public func discard(_ series: Set<SeriesKey>) {
        guard !series.isEmpty else { return }
        guard background != nil else { return forget(series) }
        if !background!.pending.isEmpty {
            background!.inbox.put(.add(background!.pending))
            background!.pending.removeAll(keepingCapacity: true)
        }
        background!.inbox.put(.discard(series))
    }

    private func forget(_ series: Set<SeriesKey>) {
        if runs.isEmpty {
            // All still in memory: drop them, and size the columns as if they had never come.
            rows.removeAll { series.contains(SeriesKey(station: $0.station, metric: $0.metric)) }
            count = rows.count
            widths = Self.header.map(\.count)
            for row in rows where format == .text {
                for i in 0..<(Self.header.count - 1) { widths[i] = max(widths[i], row.fields[i].count) }
            }
            return
        }
        // Spilled already: skipped when printing (the columns keep the widths they had).
        discarded.formUnion(series)
        discardBefore = nextSeq
    }

    /// Writes every line in order, then forgets them. Returns how many transitions it printed.
    @discardableResult
    public func finish(_ write: (String) -> Void) throws -> Int {
        try endBackground()
        defer {
            rows = []
            removeRuns()
        }
        if format == .text {
            guard count > 0 else {
                write("no transitions")
                return 0
            }
            write(line(Self.header))
        }
        rows.sort(by: Row.less)
        var printed = 0
        if runs.isEmpty {
            for row in rows where emit(row, write) { printed += 1 }
            return printed
        }
        var readers = try runs.map { try RunFile.Reader(path: $0) }
        var heads: [Row?] = try readers.indices.map { try readers[$0].next() }
        var memory = 0
        while true {
            var best = -1
            var bestRow: Row? = memory < rows.count ? rows[memory] : nil
            for (i, head) in heads.enumerated() {
                guard let head else { continue }
                if bestRow == nil || Row.less(head, bestRow!) {
                    best = i
                    bestRow = head
                }
            }
            guard let row = bestRow else { break }
            if emit(row, write) { printed += 1 }
            if best < 0 {
                memory += 1
            } else {
                heads[best] = try readers[best].next()
            }
        }
        return printed
    }

    func emit(_ row: Row, _ write: (String) -> Void) -> Bool {
        if row.seq < discardBefore, discarded.contains(SeriesKey(station: row.station, metric: row.metric)) {
            return false
        }
        if format == .json {
            write(row.fields[0])
            return true
        }
        write(line(row.fields.prefix(Self.header.count)))
        if explain, row.fields.count > Self.header.count {
            write("    why: \(row.fields[Self.header.count])")
            if row.fields.count > Self.header.count + 1 { write("    engine: \(row.fields[Self.header.count + 1])") }
        }
        return true
    }

    func line(_ cells: [String]) -> String { line(cells[...]) }

    /// The cells padded to their columns' widths (all but the last) and joined by two spaces, built
    /// in one string (a replay prints hundreds of thousands of rows).
    func line(_ cells: ArraySlice<String>) -> String {
        var out = ""
        out.reserveCapacity(cells.reduce(2 * cells.count) { $0 + $1.utf8.count } + 64)
        for (n, c) in cells.enumerated() {
            if n > 0 { out += "  " }
            out += c
            guard n != cells.count - 1 else { continue }
            let pad = widths[n] - c.count
            if pad > 0 { out += String(repeating: " ", count: pad) }
        }
        return out
    }

    private func spill() throws {
        rows.sort(by: Row.less)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "klaxon-dry-run-\(getpid())-\(UUID().uuidString).run"
        ).path
        runs.append(path)
        try RunFile.save(rows, to: path)
        rows.removeAll(keepingCapacity: true)
    }

    private func removeRuns() {
        for path in runs { unlink(path) }
        runs = []
    }
}

/// A sorted run of rows on disk: each row as its time, sequence, key strings and fields, lengths first.
enum RunFile {
    static func save(_ rows: [DryRunOutput.Row], to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw UserError("dry-run: cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var out: [UInt8] = []
        out.reserveCapacity(1 << 20)
        func int(_ v: Int64) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
        func string(_ s: String) {
            int(Int64(s.utf8.count))
            out.append(contentsOf: s.utf8)
        }
        func flush() throws {
            var offset = 0
            while offset < out.count {
                let n = out[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw UserError("dry-run: cannot write \(path): \(String(cString: strerror(errno)))")
                }
                offset += n
            }
            out.removeAll(keepingCapacity: true)
        }
        for row in rows {
            int(row.at)
            int(Int64(row.seq))
            string(row.rule)
            string(row.station)
            string(row.metric)
            int(Int64(row.fields.count))
            for f in row.fields { string(f) }
            if out.count >= 1 << 20 { try flush() }
        }
        try flush()
    }

    /// Reads a run back a buffer at a time.
    struct Reader {
        let fd: Int32
        let path: String
        var buffer: [UInt8] = []
        var position = 0

        init(path: String) throws {
            self.path = path
            fd = open(path, O_RDONLY)
            guard fd >= 0 else {
                throw UserError("dry-run: cannot read \(path): \(String(cString: strerror(errno)))")
            }
        }

        /// Makes `n` bytes available from `position`; false at the end of the file.
        mutating func need(_ n: Int) throws -> Bool {
            if buffer.count - position >= n { return true }
            buffer.removeFirst(position)
            position = 0
            let chunk = max(n - buffer.count, 256 << 10)
            let old = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: chunk))
            var filled = 0
            while filled < chunk {
                let got = buffer.withUnsafeMutableBytes { raw in
                    read(fd, raw.baseAddress! + old + filled, chunk - filled)
                }
                if got < 0 {
                    if errno == EINTR { continue }
                    throw UserError("dry-run: cannot read \(path): \(String(cString: strerror(errno)))")
                }
                if got == 0 { break }
                filled += got
            }
            buffer.removeLast(chunk - filled)
            if buffer.count >= n { return true }
            close(fd)
            return false
        }

        mutating func int() throws -> Int64? {
            guard try need(8) else { return nil }
            var v: Int64 = 0
            for k in 0..<8 { v |= Int64(buffer[position + k]) << (8 * k) }
            position += 8
            return v
        }

        mutating func string() throws -> String {
            guard let n = try int(), n >= 0, n <= Int64(Int32.max), try need(Int(n)) else {
                throw UserError("dry-run: \(path) is cut short")
            }
            let s = String(decoding: buffer[position..<position + Int(n)], as: UTF8.self)
            position += Int(n)
            return s
        }

        mutating func next() throws -> DryRunOutput.Row? {
            guard let at = try int() else { return nil }
            guard let seq = try int() else { throw UserError("dry-run: \(path) is cut short") }
            let rule = try string()
            let station = try string()
            let metric = try string()
            guard let n = try int(), n >= 0, n < 64 else { throw UserError("dry-run: \(path) is cut short") }
            var fields: [String] = []
            for _ in 0..<n { fields.append(try string()) }
            return DryRunOutput.Row(at: at, seq: Int(seq), rule: rule, station: station, metric: metric, fields: fields)
        }
    }
}

/// Standard output through a buffer: one `write` per 64 KiB, not one per line.
public final class BufferedStandardOutput: @unchecked Sendable {
    private var buffer: [UInt8] = []
    public private(set) var failed = false

    public init() { buffer.reserveCapacity(64 << 10) }

    public func line(_ s: String) {
        buffer.append(contentsOf: s.utf8)
        buffer.append(0x0A)
        if buffer.count >= 64 << 10 { flush() }
    }

    public func flush() {
        var offset = 0
        while offset < buffer.count, !failed {
            let n = buffer[offset...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                failed = true  // a closed pipe: the rest has nowhere to go
            } else {
                offset += n
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }
}
