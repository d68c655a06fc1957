import Testing

@testable import KlaxonApp

/// The sniffer's line reader: it stops at the line it needs (a large file's head was split whole).
@Suite struct PayloadLookLinesTests {
    @Test("lines come one at a time: LF and CRLF ends, empty lines skipped, no final newline, up to the limit")
    func linesOneAtATime() {
        let text = "# comment\r\n\r\nstation,metric,time,value\n\nA,ö,2026-01-01T00:00:00Z,1\nlast"
        #expect(
            Array(PayloadLook.lines(of: text, upTo: 10)) == [
                "# comment\r", "\r", "station,metric,time,value", "A,ö,2026-01-01T00:00:00Z,1", "last",
            ])
        #expect(Array(PayloadLook.lines(of: text, upTo: 2)) == ["# comment\r", "\r"])
        #expect(Array(PayloadLook.lines(of: "", upTo: 5)).isEmpty)
        #expect(Array(PayloadLook.lines(of: "\n\n\n", upTo: 5)).isEmpty)
    }

    @Test("a readings header after a comment block and CRLF ends is still a readings file")
    func readingsAfterComments() {
        let look = PayloadLook.text("# made by hand\r\n\r\nstation,metric,time,value\r\nA,m,2026-01-01T00:00:00Z,1\r\n")
        #expect(look.format == .readings)
    }
}
