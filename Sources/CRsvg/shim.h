#ifndef KLAXON_CRSVG_SHIM_H
#define KLAXON_CRSVG_SHIM_H

// librsvg (SVG → cairo) and cairo's image surface and PNG writer, for the status site's PNG charts
// (KlaxonServer/Site/Charts/SVGRaster.swift). Debian: librsvg2-dev (which brings libcairo2-dev).
#include <cairo.h>
#include <librsvg/rsvg.h>

// g_object_unref and g_error_free take untyped or macro-wrapped arguments: typed wrappers.
static inline void klaxon_rsvg_handle_free(RsvgHandle *handle) {
    if (handle) g_object_unref(handle);
}

// A GError's message (never NULL) and its release.
static inline const char *klaxon_gerror_message(const GError *error) {
    return (error && error->message) ? error->message : "unknown error";
}
static inline void klaxon_gerror_free(GError *error) {
    if (error) g_error_free(error);
}

// The status site's SVG is parsed with librsvg's safety limits on (no RSVG_HANDLE_FLAG_UNLIMITED)
// and without a base file, so no external resource (image, stylesheet, font) can be loaded.
static inline RsvgHandle *klaxon_rsvg_handle_new(const void *data, size_t length, GError **error) {
    return rsvg_handle_new_from_data((const guint8 *)data, (gsize)length, error);
}

#endif
