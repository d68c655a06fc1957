#ifndef KLAXON_CRSVG_SHIM_H
#define KLAXON_CRSVG_SHIM_H

// The few functions of librsvg, cairo and GLib that the status site's PNG charts use
// (KlaxonServer/Site/Charts/RsvgLibrary.swift), as C types: librsvg is loaded with dlopen at the
// first render, not linked. Linked, its 40-odd libraries (GLib, GIO, Pango, cairo, HarfBuzz,
// libxml2, …) cost every klaxon process about 9 MiB of resident memory at start, chart or not.
//
// The declarations below copy the ABI of librsvg 2.52+ (rsvg.h), cairo 1.x (cairo.h) and GLib 2.x
// (gerror.h), which those projects keep stable: Debian's librsvg2-2 provides them.

#include <stddef.h>
#include <stdint.h>

typedef struct _RsvgHandle RsvgHandle;
typedef struct _cairo cairo_t;
typedef struct _cairo_surface cairo_surface_t;

// gerror.h: struct _GError { GQuark domain; gint code; gchar *message; }.
typedef struct {
    uint32_t domain;
    int32_t code;
    char *message;
} KlaxonGError;

// rsvg.h: struct _RsvgRectangle { double x, y, width, height; }.
typedef struct {
    double x;
    double y;
    double width;
    double height;
} KlaxonRsvgRectangle;

// cairo.h: cairo_status_t and cairo_format_t values used.
enum {
    KLAXON_CAIRO_STATUS_SUCCESS = 0,
    KLAXON_CAIRO_STATUS_WRITE_ERROR = 11,
    KLAXON_CAIRO_FORMAT_ARGB32 = 0,
    KLAXON_CAIRO_FORMAT_RGB24 = 1,
};

// GLib (gboolean is int).
typedef void (*klaxon_g_object_unref_fn)(void *object);
typedef void (*klaxon_g_error_free_fn)(KlaxonGError *error);

// librsvg.
typedef RsvgHandle *(*klaxon_rsvg_handle_new_from_data_fn)(const uint8_t *data, size_t length, KlaxonGError **error);
typedef void (*klaxon_rsvg_handle_set_dpi_fn)(RsvgHandle *handle, double dpi);
typedef int (*klaxon_rsvg_handle_get_intrinsic_size_in_pixels_fn)(RsvgHandle *handle, double *width, double *height);
typedef int (*klaxon_rsvg_handle_render_document_fn)(
    RsvgHandle *handle, cairo_t *cr, const KlaxonRsvgRectangle *viewport, KlaxonGError **error);

// cairo (cairo_status_t and cairo_format_t are int).
typedef cairo_surface_t *(*klaxon_cairo_image_surface_create_fn)(int format, int width, int height);
typedef int (*klaxon_cairo_surface_status_fn)(cairo_surface_t *surface);
typedef void (*klaxon_cairo_surface_flush_fn)(cairo_surface_t *surface);
typedef void (*klaxon_cairo_surface_destroy_fn)(cairo_surface_t *surface);
typedef cairo_t *(*klaxon_cairo_create_fn)(cairo_surface_t *surface);
typedef int (*klaxon_cairo_status_fn)(cairo_t *cr);
typedef void (*klaxon_cairo_set_source_rgb_fn)(cairo_t *cr, double red, double green, double blue);
typedef void (*klaxon_cairo_paint_fn)(cairo_t *cr);
typedef void (*klaxon_cairo_destroy_fn)(cairo_t *cr);
typedef const char *(*klaxon_cairo_status_to_string_fn)(int status);
typedef int (*klaxon_cairo_write_func_t)(void *closure, const unsigned char *data, unsigned int length);
typedef int (*klaxon_cairo_surface_write_to_png_stream_fn)(
    cairo_surface_t *surface, klaxon_cairo_write_func_t write, void *closure);

#endif
