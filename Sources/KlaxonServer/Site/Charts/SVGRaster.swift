import CRsvg
import Foundation

/// SVG text to PNG bytes, through librsvg and cairo (Debian's `librsvg2-2`, loaded at the first
/// render: `RsvgLibrary`), for the status site's charts as pictures (`ChartImages`).
///
/// It lives in `KlaxonServer`, beside the charts it draws, rather than in a target of its own: the
/// site is its one user, and the daemon reaches it through `ChartImages` (a `KlaxonRaster` target
/// would add a module and a public surface for one type).
///
/// librsvg and cairo block while they parse, draw and compress, so a render never runs on the
/// cooperative pool: it runs on `RenderThreads` (at most `Limits.threads` at once, at most
/// `Limits.queue` waiting, the rest refused as busy) and the caller awaits it. Every render is
/// bounded before it starts: the SVG's size, and the picture's sides and pixels. librsvg parses
/// with its safety limits on and no base file, so nothing outside the SVG (an image, a font, a
/// stylesheet) is loaded. A render cannot be interrupted once it runs: the bound on its time is the
/// bound on its input, which the site's own chart code writes.
final class SVGRaster: Sendable {
    struct Limits: Sendable {
        /// Renders at once (each on a thread of its own).
        var threads: Int
        /// Renders waiting for a thread; one more is refused as busy.
        var queue = 16
        /// The largest SVG taken, in bytes of UTF-8.
        var svgBytes = 1 << 20
        /// The largest picture: each side, and width × height, in pixels.
        var side = 4096
        var pixels = 4_000_000
        /// The largest PNG written.
        var pngBytes = 8 << 20

        /// One render at a time on a machine of up to 3 cores (the pool and the server keep the
        /// rest), half the cores beyond, at most 4.
        static var standard: Limits {
            Limits(threads: min(4, max(1, ProcessInfo.processInfo.activeProcessorCount / 2)))
        }
    }

    /// Why a picture was not made.
    struct Failure: Error, CustomStringConvertible, Equatable {
        enum Kind: Equatable {
            /// Every render thread is taken and the queue is full: try again shortly.
            case busy
            /// The SVG or the picture is larger than the limits allow.
            case tooLarge
            /// librsvg could not read the SVG.
            case parse
            /// librsvg or cairo could not draw it, or cairo could not write the PNG.
            case render
            /// librsvg is not installed (or too old): no picture can be drawn.
            case unavailable
        }

        var kind: Kind
        var message: String
        var description: String { message }
    }

    /// The picture's size: the SVG's own size times a scale, or a width (the height in proportion).
    enum Size: Sendable {
        case scale(Double)
        case width(Int)
    }

    /// A picture: PNG bytes and its size in pixels.
    struct Picture: Sendable {
        var png: [UInt8]
        var width: Int
        var height: Int
    }

    /// Who a render is for. Visitors of the site (anyone, unauthenticated) share `threads`, and are told
    /// "busy" when they are all taken; delivery (the charts in alert emails) has a thread of its own and a
    /// longer queue, so a flood of anonymous chart requests never costs an alert its chart, and a delivery
    /// never waits behind a visitor's render.
    enum Lane: Sendable {
        case visitor
        case delivery
    }

    let limits: Limits
    /// The visitors' lane.
    let threads: RenderThreads
    /// Delivery's lane: one thread (alert charts come a few at a time, from the dispatcher's bounded sends),
    /// 64 waiting.
    let deliveryThreads: RenderThreads

    init(limits: Limits = .standard, idle: Duration = .seconds(60)) {
        self.limits = limits
        threads = RenderThreads(threads: limits.threads, queue: limits.queue, idle: idle)
        deliveryThreads = RenderThreads(threads: 1, queue: 64, idle: idle)
    }

    /// The one rasterizer of the process: its threads are shared by the site and `ChartImages`.
    static let shared = SVGRaster()

    /// Renders `svg` at `size` over an opaque `background` (`#RRGGBB`; nil: transparent).
    func png(
        _ svg: String, size: Size = .scale(1), background: String? = "#ffffff", for lane: Lane = .visitor
    ) async throws -> Picture {
        guard !svg.isEmpty else { throw Failure(kind: .parse, message: "the SVG is empty") }
        guard svg.utf8.count <= limits.svgBytes else {
            throw Failure(
                kind: .tooLarge, message: "the SVG is \(svg.utf8.count) bytes, more than the \(limits.svgBytes) allowed"
            )
        }
        let limits = self.limits
        let colour = try background.map(Self.rgb)
        do {
            let threads = lane == .visitor ? self.threads : deliveryThreads
            return try await threads.run { try Self.render(svg, size: size, background: colour, limits: limits) }
        } catch RenderThreads.Refusal.busy {
            throw Failure(
                kind: .busy,
                message:
                    "every chart renderer is busy (\(limits.threads) drawing, \(limits.queue) waiting): try again shortly"
            )
        }
    }

    /// `#RRGGBB` as red, green and blue in 0…1.
    static func rgb(_ hex: String) throws -> (Double, Double, Double) {
        let digits = Array(hex.utf8.dropFirst(hex.hasPrefix("#") ? 1 : 0))
        guard digits.count == 6, let value = Int(String(decoding: digits, as: UTF8.self), radix: 16) else {
            throw Failure(kind: .render, message: "\(hex.prefix(20)) is not a colour (#RRGGBB)")
        }
        return (Double(value >> 16 & 0xFF) / 255, Double(value >> 8 & 0xFF) / 255, Double(value & 0xFF) / 255)
    }

    /// The PNG's bytes as cairo writes them, up to a bound.
    private final class Sink {
        var bytes: [UInt8] = []
        var overflowed = false
        let limit: Int
        init(limit: Int) { self.limit = limit }
    }

    /// The render itself: blocking, on a render thread (where librsvg is loaded, the first time).
    /// Everything librsvg and cairo hand out is released on every path (`defer`).
    static func render(
        _ svg: String, size: Size, background: (Double, Double, Double)?, limits: Limits
    ) throws -> Picture {
        let rsvg = try RsvgLibrary.shared.get()
        var error: UnsafeMutablePointer<KlaxonGError>? = nil
        var text = svg
        let handle = text.withUTF8 { bytes in rsvg.handleNewFromData(bytes.baseAddress, bytes.count, &error) }
        guard let handle else {
            throw Failure(kind: .parse, message: "librsvg could not read the SVG: " + rsvg.message(error))
        }
        defer { rsvg.gObjectUnref(UnsafeMutableRawPointer(handle)) }
        if error != nil { _ = rsvg.message(error) }
        error = nil
        rsvg.handleSetDPI(handle, 96)

        var svgWidth = 0.0
        var svgHeight = 0.0
        guard rsvg.intrinsicSizeInPixels(handle, &svgWidth, &svgHeight) != 0,
            svgWidth.isFinite, svgHeight.isFinite, svgWidth > 0, svgHeight > 0
        else {
            throw Failure(kind: .parse, message: "the SVG has no size in pixels (give its width and height)")
        }
        let scale: Double
        switch size {
        case .scale(let s): scale = s
        case .width(let w): scale = Double(w) / svgWidth
        }
        guard scale.isFinite, scale > 0 else {
            throw Failure(kind: .tooLarge, message: "the scale \(scale) is not a positive number")
        }
        let width = (svgWidth * scale).rounded(.up)
        let height = (svgHeight * scale).rounded(.up)
        guard width <= Double(limits.side), height <= Double(limits.side), width * height <= Double(limits.pixels)
        else {
            throw Failure(
                kind: .tooLarge,
                message:
                    "a picture of \(SVGWriter.num(width)) × \(SVGWriter.num(height)) pixels is larger than allowed (\(limits.side) a side, \(limits.pixels) pixels)"
            )
        }

        // Opaque pictures are written as RGB: a quarter fewer bytes to compress than with alpha.
        let format = Int32(background == nil ? KLAXON_CAIRO_FORMAT_ARGB32 : KLAXON_CAIRO_FORMAT_RGB24)
        let ok = Int32(KLAXON_CAIRO_STATUS_SUCCESS)
        guard let surface = rsvg.imageSurfaceCreate(format, Int32(width), Int32(height)) else {
            throw Failure(kind: .render, message: "cairo could not make the picture")
        }
        defer { rsvg.surfaceDestroy(surface) }
        guard rsvg.surfaceStatus(surface) == ok else {
            throw Failure(
                kind: .render, message: "cairo could not make the picture: \(rsvg.words(rsvg.surfaceStatus(surface)))")
        }
        guard let cr = rsvg.create(surface) else { throw Failure(kind: .render, message: "cairo could not draw") }
        defer { rsvg.destroy(cr) }
        guard rsvg.status(cr) == ok else {
            throw Failure(kind: .render, message: "cairo could not draw: \(rsvg.words(rsvg.status(cr)))")
        }
        if let (r, g, b) = background {
            rsvg.setSourceRGB(cr, r, g, b)
            rsvg.paint(cr)
        }
        var viewport = KlaxonRsvgRectangle(x: 0, y: 0, width: svgWidth * scale, height: svgHeight * scale)
        guard rsvg.renderDocument(handle, cr, &viewport, &error) != 0 else {
            throw Failure(kind: .render, message: "librsvg could not draw the SVG: " + rsvg.message(error))
        }
        if error != nil { _ = rsvg.message(error) }
        guard rsvg.status(cr) == ok else {
            throw Failure(kind: .render, message: "cairo could not draw the SVG: \(rsvg.words(rsvg.status(cr)))")
        }
        rsvg.surfaceFlush(surface)

        let sink = Sink(limit: limits.pngBytes)
        let written = withExtendedLifetime(sink) {
            rsvg.writeToPNGStream(
                surface,
                { closure, data, length in
                    guard let closure, let data else { return Int32(KLAXON_CAIRO_STATUS_WRITE_ERROR) }
                    let sink = Unmanaged<Sink>.fromOpaque(closure).takeUnretainedValue()
                    guard sink.bytes.count + Int(length) <= sink.limit else {
                        sink.overflowed = true
                        return Int32(KLAXON_CAIRO_STATUS_WRITE_ERROR)
                    }
                    sink.bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: Int(length)))
                    return Int32(KLAXON_CAIRO_STATUS_SUCCESS)
                }, Unmanaged.passUnretained(sink).toOpaque())
        }
        guard written == ok else {
            if sink.overflowed {
                throw Failure(kind: .tooLarge, message: "the PNG would be larger than \(limits.pngBytes) bytes")
            }
            throw Failure(kind: .render, message: "cairo could not write the PNG: \(rsvg.words(written))")
        }
        return Picture(png: sink.bytes, width: Int(width), height: Int(height))
    }
}
