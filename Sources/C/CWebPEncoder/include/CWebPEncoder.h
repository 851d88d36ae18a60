// A WebP writer on libwebp's encoder and mux API, for the Imaging module (docs/ARCHITECTURE.md §2 step 7,
// docs/FORMATS.md).
//
// Why not libvips' webpsave: libvips 8.14's webpsave writes an EXIF chunk whatever `strip` says (the source's
// EXIF, GPS included, or one it makes from the image's header when the image has none). The file is built here
// from the caller's pixels alone: a VP8 bitstream and, when given, one ICCP chunk; no EXIF, no XMP, no alpha.
//
// libwebp's types stay inside the implementation: this header uses plain C types only.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef enum {
    CWEBP_OK = 0,
    /// libwebp refused (a bad parameter, the picture too large). `message` says why.
    CWEBP_ERROR = 1,
    CWEBP_NO_MEMORY = 2,
} cwebp_status;

#define CWEBP_MESSAGE_LENGTH 256

/// Encodes `width × height` interleaved 8-bit RGB (`stride` bytes per row) as lossy WebP at `quality` (1–100) and
/// libwebp's `method` (0 fastest – 6; libvips' webpsave uses 4), with `icc` (may be NULL) as its colour profile. On CWEBP_OK,
/// `*out` is a malloc'd buffer of `*out_length` bytes (free with free()). Otherwise `message`
/// (CWEBP_MESSAGE_LENGTH bytes) says why.
cwebp_status cwebp_encode_rgb(const uint8_t *pixels, int width, int height, size_t stride, int quality, int method,
                              const uint8_t *icc, size_t icc_length, uint8_t **out, size_t *out_length,
                              char *message);
