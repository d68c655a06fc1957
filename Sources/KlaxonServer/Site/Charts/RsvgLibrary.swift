import CRsvg
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// librsvg, cairo and GLib, loaded with `dlopen` at the first render (on a render thread) instead of
/// linked: linked, their 40-odd shared libraries cost every `klaxon` process about 9 MiB of resident
/// memory at start (a `klaxon check` as much as the daemon), whether it ever draws a chart or not.
/// The functions' C types are in `CRsvg/shim.h`; cairo's and GLib's are found through librsvg's own
/// dependencies. Loaded once per process and never unloaded (GLib cannot be).
struct RsvgLibrary: @unchecked Sendable {
    /// Debian's `librsvg2-2`.
    static let soname = "librsvg-2.so.2"

    let gObjectUnref: klaxon_g_object_unref_fn
    let gErrorFree: klaxon_g_error_free_fn
    let handleNewFromData: klaxon_rsvg_handle_new_from_data_fn
    let handleSetDPI: klaxon_rsvg_handle_set_dpi_fn
    let intrinsicSizeInPixels: klaxon_rsvg_handle_get_intrinsic_size_in_pixels_fn
    let renderDocument: klaxon_rsvg_handle_render_document_fn
    let imageSurfaceCreate: klaxon_cairo_image_surface_create_fn
    let surfaceStatus: klaxon_cairo_surface_status_fn
    let surfaceFlush: klaxon_cairo_surface_flush_fn
    let surfaceDestroy: klaxon_cairo_surface_destroy_fn
    let create: klaxon_cairo_create_fn
    let status: klaxon_cairo_status_fn
    let setSourceRGB: klaxon_cairo_set_source_rgb_fn
    let paint: klaxon_cairo_paint_fn
    let destroy: klaxon_cairo_destroy_fn
    let statusToString: klaxon_cairo_status_to_string_fn
    let writeToPNGStream: klaxon_cairo_surface_write_to_png_stream_fn

    /// The library, or why it could not be loaded (the first render tries; the answer is kept).
    static let shared: Result<RsvgLibrary, SVGRaster.Failure> = {
        do {
            return .success(try load(soname))
        } catch let failure as SVGRaster.Failure {
            return .failure(failure)
        } catch {
            return .failure(SVGRaster.Failure(kind: .unavailable, message: "librsvg could not be loaded: \(error)"))
        }
    }()

    /// Loads the library named `soname` and looks up every function.
    static func load(_ soname: String) throws -> RsvgLibrary {
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            throw SVGRaster.Failure(
                kind: .unavailable,
                message:
                    "librsvg is not installed, so charts cannot be drawn as PNG (Debian: apt-get install librsvg2-2): \(lastError())"
            )
        }
        func symbol<T>(_ name: String, as type: T.Type) throws -> T {
            guard let address = dlsym(handle, name) else {
                throw SVGRaster.Failure(
                    kind: .unavailable,
                    message: "\(soname) has no \(name) (librsvg 2.52 or later is needed): \(lastError())")
            }
            return unsafeBitCast(address, to: type)
        }
        return RsvgLibrary(
            gObjectUnref: try symbol("g_object_unref", as: klaxon_g_object_unref_fn.self),
            gErrorFree: try symbol("g_error_free", as: klaxon_g_error_free_fn.self),
            handleNewFromData: try symbol("rsvg_handle_new_from_data", as: klaxon_rsvg_handle_new_from_data_fn.self),
            handleSetDPI: try symbol("rsvg_handle_set_dpi", as: klaxon_rsvg_handle_set_dpi_fn.self),
            intrinsicSizeInPixels: try symbol(
                "rsvg_handle_get_intrinsic_size_in_pixels", as: klaxon_rsvg_handle_get_intrinsic_size_in_pixels_fn.self),
            renderDocument: try symbol("rsvg_handle_render_document", as: klaxon_rsvg_handle_render_document_fn.self),
            imageSurfaceCreate: try symbol("cairo_image_surface_create", as: klaxon_cairo_image_surface_create_fn.self),
            surfaceStatus: try symbol("cairo_surface_status", as: klaxon_cairo_surface_status_fn.self),
            surfaceFlush: try symbol("cairo_surface_flush", as: klaxon_cairo_surface_flush_fn.self),
            surfaceDestroy: try symbol("cairo_surface_destroy", as: klaxon_cairo_surface_destroy_fn.self),
            create: try symbol("cairo_create", as: klaxon_cairo_create_fn.self),
            status: try symbol("cairo_status", as: klaxon_cairo_status_fn.self),
            setSourceRGB: try symbol("cairo_set_source_rgb", as: klaxon_cairo_set_source_rgb_fn.self),
            paint: try symbol("cairo_paint", as: klaxon_cairo_paint_fn.self),
            destroy: try symbol("cairo_destroy", as: klaxon_cairo_destroy_fn.self),
            statusToString: try symbol("cairo_status_to_string", as: klaxon_cairo_status_to_string_fn.self),
            writeToPNGStream: try symbol(
                "cairo_surface_write_to_png_stream", as: klaxon_cairo_surface_write_to_png_stream_fn.self))
    }

    private static func lastError() -> String {
        dlerror().map { String(cString: $0) } ?? "no reason given"
    }

    /// A GError's message, and the error freed.
    func message(_ error: UnsafeMutablePointer<KlaxonGError>?) -> String {
        defer { if let error { gErrorFree(error) } }
        guard let text = error?.pointee.message else { return "no reason given" }
        return String(cString: text)
    }

    /// cairo's words for a status.
    func words(_ status: Int32) -> String { statusToString(status).map { String(cString: $0) } ?? "status \(status)" }
}
