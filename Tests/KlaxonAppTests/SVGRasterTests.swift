import Dispatch
import Foundation
import KlaxonCore
import KlaxonTesting
import Testing

@testable import KlaxonServer

/// Keeps a picture under `.build/screenshots/` (beside the browser tests' screenshots), to look at.
func keepPicture(_ bytes: [UInt8], _ name: String) {
    try? FileManager.default.createDirectory(at: screenshotFolder, withIntermediateDirectories: true)
    try? Data(bytes).write(to: screenshotFolder.appendingPathComponent(name))
}

/// A PNG's size from its signature and IHDR chunk; nil if the bytes are not a PNG.
func pngSize(_ b: [UInt8]) -> (width: Int, height: Int)? {
    guard b.count > 33, b.prefix(8) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A],
        Array(b[12..<16]) == Array("IHDR".utf8)
    else { return nil }
    func be32(_ at: Int) -> Int { b[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
    return (be32(16), be32(20))
}

/// The rasterizer (librsvg and cairo through `CRsvg`) and its threads, without a server.
@Suite("charts as PNG: the rasterizer", .serialized, .timeLimit(.minutes(10)))
struct SVGRasterTests {
    /// Text with no markup left and nothing XML 1.0 cannot hold.
    static func wellFormed(_ text: String) -> Bool {
        !text.contains("<") && !text.contains("]]>")
            && !text.unicodeScalars.contains {
                ($0.value < 0x20 && !["\t", "\n", "\r"].contains($0)) || $0.value == 0xFFFE || $0.value == 0xFFFF
            }
    }

    @Test("SVG text is escaped for XML as well as HTML: markup, quotes, and control characters as U+FFFD")
    func escape() {
        #expect(
            SVGWriter.escape("<a href=\"x\">&amp; 'q' ]]>")
                == "&lt;a href=&quot;x&quot;&gt;&amp;amp; &#39;q&#39; ]]&gt;")
        #expect(
            SVGWriter.escape("a\u{1}b\u{1B}[31m\u{FFFE}\u{FFFF}\u{7F}")
                == "a\u{FFFD}b\u{FFFD}[31m\u{FFFD}\u{FFFD}\u{7F}")
        #expect(SVGWriter.escape("tab\tline\nreturn\r Zürich 日本") == "tab\tline\nreturn\r Zürich 日本")
        #expect(Self.wellFormed(SVGWriter.escape(String(decoding: (0..<128).map { UInt8($0) }, as: UTF8.self))))
    }

    @Test("render threads: a full queue refuses at once; a cancelled caller's waiting job leaves the queue")
    func renderThreads() async throws {
        let threads = RenderThreads(threads: 1, queue: 1)
        let release = DispatchSemaphore(value: 0)
        let running = Task { try await threads.run { release.wait() } }
        try await poll(until: "the first job runs") { threads.load.running == 1 }
        let waiting = Task { try await threads.run { 42 } }
        try await poll(until: "the second job waits") { threads.load.waiting == 1 }
        await #expect(throws: RenderThreads.Refusal.busy) { try await threads.run { 0 } }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(threads.load.waiting == 0)
        release.signal()
        try await running.value
        #expect(try await threads.run { 7 } == 7)
    }

    @Test("the rasterizer: text is drawn (a font is installed); librsvg's errors and the limits are Swift errors")
    func raster() async throws {
        let raster = SVGRaster(limits: .init(threads: 1, svgBytes: 4096, pixels: 1_000_000))
        func svg(_ text: String) -> String {
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"300\" height=\"60\" font-family=\"system-ui, sans-serif\"><text x=\"10\" y=\"40\" font-size=\"30\">\(text)</text></svg>"
        }
        // Text compresses far worse than a blank picture: without a font, both would be blank.
        let blank = try await raster.png(svg(""))
        let text = try await raster.png(svg("Klaxon 12.5 ft"))
        #expect(pngSize(text.png).map { [$0.width, $0.height] } == [300, 60])
        #expect(text.png.count > blank.png.count + 300, "\(text.png.count) vs \(blank.png.count) bytes")
        #expect(pngSize(try await raster.png(svg("x"), size: .width(150)).png)?.height == 30)

        func failure(_ svg: String, size: SVGRaster.Size = .scale(1)) async -> SVGRaster.Failure? {
            do {
                _ = try await raster.png(svg, size: size)
                return nil
            } catch {
                return error as? SVGRaster.Failure
            }
        }
        let broken = await failure("<svg xmlns=\"http://www.w3.org/2000/svg\"><text>")
        #expect(broken?.kind == .parse)
        #expect(broken?.message.hasPrefix("librsvg could not read the SVG: ") == true, "\(String(describing: broken))")
        #expect(await failure("not svg at all")?.kind == .parse)
        #expect(await failure("")?.kind == .parse)
        #expect(await failure(svg(String(repeating: "x", count: 5000)))?.kind == .tooLarge)
        #expect(await failure(svg("x"), size: .width(5000))?.kind == .tooLarge)
        #expect(await failure(svg("x"), size: .scale(0))?.kind == .tooLarge)
        // Without librsvg (none of that name), drawing fails with a message that says what to install.
        do {
            _ = try RsvgLibrary.load("libklaxon-no-such-library.so.0")
            Issue.record("a library that does not exist was loaded")
        } catch let e as SVGRaster.Failure {
            #expect(e.kind == .unavailable)
            #expect(e.message.contains("apt-get install librsvg2-2"), "\(e.message)")
        }
        // A transparent picture (no background) draws too.
        #expect(pngSize(try await raster.png(svg("x"), background: nil).png) != nil)
    }

}
