// An AVIF writer on libheif's encoder API (AV1 through libheif's aom encoder plugin), for the Imaging module
// (docs/ARCHITECTURE.md §2 step 7, docs/FORMATS.md).
//
// Why not libvips' heifsave: libvips 8.14's heifsave fails against libheif 1.19 (its writer callback returns an
// error struct without a message, which libheif 1.17+ refuses: "heif_writer callback returned a null error text";
// docs/UPSTREAM-BUGS.md). The image is built here from the caller's pixels alone, so nothing of the source's
// metadata can reach the file: one colour profile (the caller's ICC profile), no EXIF, no XMP, no alpha.
//
// libheif's types stay inside the implementation: this header uses plain C types only.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef enum {
    CAVIF_OK = 0,
    /// libheif or the encoder refused (no AV1 encoder plugin, a bad parameter). `message` says why.
    CAVIF_ERROR = 1,
    CAVIF_NO_MEMORY = 2,
} cavif_status;

#define CAVIF_MESSAGE_LENGTH 256

typedef struct {
    /// 1–100: libheif's lossy quality (mapped onto aom's quantiser).
    int quality;
    /// aom's cpu-used, 0 (slowest) to 9.
    int speed;
    /// Encoder threads (1: the render's own core).
    int threads;
} cavif_settings;

/// Encodes `width × height` interleaved 8-bit RGB (`stride` bytes per row) as a 4:2:0 AVIF with `icc` (may be
/// NULL) as its colour profile. On CAVIF_OK, `*out` is a malloc'd buffer of `*out_length` bytes (free with free()).
/// Otherwise `message` (CAVIF_MESSAGE_LENGTH bytes) says why.
cavif_status cavif_encode_rgb(const uint8_t *pixels, int width, int height, size_t stride, const uint8_t *icc,
                              size_t icc_length, cavif_settings settings, uint8_t **out, size_t *out_length,
                              char *message);

/// The name of the AV1 encoder libheif would use ("AOMedia Project AV1 Encoder …"), or NULL when none is
/// installed (the libheif-plugin-aomenc package). Loads libheif's plugins on first use.
const char *cavif_encoder_name(void);
