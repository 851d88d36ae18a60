// A decoded tile's 4:2:0 YCbCr planes turned into RGB as libheif 1.19 turns them by default, for only the pixels
// the region reads (docs/ARCHITECTURE.md §3, "The HEIF region decoder"). Private to CHEIFRegion.
#ifndef CHEIF_CONVERSION_H
#define CHEIF_CONVERSION_H

#include <stddef.h>
#include <stdint.h>

#include <libheif/heif.h>

/// The matrix of one decoded image, as libheif would convert it.
/// 8-bit planes (`bits` 8): `Op_YCbCr420_to_RGB24`, full range only, each chroma sample for its 2 × 2 luma block,
/// the coefficients in 1/256 units. Deeper planes (`bits` 9–16): `Op_YCbCr420_to_RRGGBBaa`, the same sampling,
/// in single-precision floats, either range.
typedef struct {
    int bits;
    int r_cr;
    int g_cb;
    int g_cr;
    int b_cb;
    float r_cr_f;
    float g_cb_f;
    float g_cr_f;
    float b_cb_f;
    int full_range;
} ycbcr_matrix;

/// One decoded tile (or a whole non-grid image) as the region's copy reads it: libheif's interleaved RGB(A)
/// (`plane`), or (`luma` set) its 4:2:0 planes of `matrix.bits` bits, turned into RGB as the overlap is copied or
/// summed, exactly as libheif would have turned the whole tile. Strides in bytes; deeper samples are native
/// `uint16_t`.
typedef struct {
    int width;
    int height;
    const uint8_t *plane;
    int stride;
    const uint8_t *luma;
    const uint8_t *cb;
    const uint8_t *cr;
    int luma_stride;
    int cb_stride;
    int cr_stride;
    ycbcr_matrix matrix;
} tile_pixels;

/// The matrix libheif 1.19 converts `image`'s `bits`-bit 4:2:0 planes with, from the decoded image's nclx (none:
/// full range, libheif's default BT.601 coefficients). 0 where libheif converts otherwise (8-bit limited range; a
/// matrix without fixed weights, or one it converts with another operation): libheif then converts the tile.
int cheif_decoded_matrix(const struct heif_image *image, int bits, ycbcr_matrix *out);

/// Pixels the span conversions convert per step, through buffers on the stack.
enum { cheif_span_step = 128 };

/// One step of a span: `count` pixels from column `first`, the chroma samples they read (from `chroma_first`), and
/// whether the step starts on a chroma sample's second pixel (`odd`: the per-pixel terms then start one late).
typedef struct {
    int first;
    int count;
    int odd;
    int chroma_first;
    int chroma_count;
} cheif_step;

/// The step `done` pixels into a span of `count` from column `x`.
static inline cheif_step cheif_step_at(int x, int done, int count) {
    const int first = x + done;
    const int n = count - done < cheif_span_step ? count - done : cheif_span_step;
    return (cheif_step){
        .first = first,
        .count = n,
        .odd = first & 1,
        .chroma_first = first / 2,
        .chroma_count = ((first & 1) + n + 1) / 2,
    };
}

/// Converts `count` pixels of 8-bit tile row `y` from column `x` into RGB: written to `bytes`, or (`bytes` NULL)
/// added to the per-sample sums `sums`. Each step runs loops simple enough for the compiler to vectorize: each
/// chroma sample's three terms once, spread to the two pixels that share it; the pixels; the samples interleaved.
static inline void cheif_convert_span(const tile_pixels *tile, int y, int x, int count, uint8_t *bytes,
                                      uint32_t *sums) {
    const ycbcr_matrix m = tile->matrix;
    const uint8_t *luma = tile->luma + (size_t)y * tile->luma_stride;
    const uint8_t *cb_row = tile->cb + (size_t)(y / 2) * tile->cb_stride;
    const uint8_t *cr_row = tile->cr + (size_t)(y / 2) * tile->cr_stride;
    // Terms within ±256, sums within 16 bits: 16-bit lanes, twice as many per vector as 32-bit ones.
    int16_t red_term[cheif_span_step + 2];
    int16_t green_term[cheif_span_step + 2];
    int16_t blue_term[cheif_span_step + 2];
    uint8_t red[cheif_span_step];
    uint8_t green[cheif_span_step];
    uint8_t blue[cheif_span_step];
    uint8_t interleaved[3 * cheif_span_step];
    for (int done = 0; done < count; done += cheif_span_step) {
        const cheif_step step = cheif_step_at(x, done, count);
        for (int j = 0; j < step.chroma_count; j++) {
            const int cb = cb_row[step.chroma_first + j] - 128;
            const int cr = cr_row[step.chroma_first + j] - 128;
            // Arithmetic shifts of negative values, as libheif's.
            const int r = (m.r_cr * cr + 128) >> 8;
            const int g = (m.g_cb * cb + m.g_cr * cr + 128) >> 8;
            const int b = (m.b_cb * cb + 128) >> 8;
            red_term[2 * j] = (int16_t)r;
            red_term[2 * j + 1] = (int16_t)r;
            green_term[2 * j] = (int16_t)g;
            green_term[2 * j + 1] = (int16_t)g;
            blue_term[2 * j] = (int16_t)b;
            blue_term[2 * j + 1] = (int16_t)b;
        }
        const uint8_t *row = luma + step.first;
        for (int k = 0; k < step.count; k++) {
            const int16_t yv = row[k];
            const int16_t r = (int16_t)(yv + red_term[k + step.odd]);
            const int16_t g = (int16_t)(yv + green_term[k + step.odd]);
            const int16_t b = (int16_t)(yv + blue_term[k + step.odd]);
            red[k] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
            green[k] = (uint8_t)(g < 0 ? 0 : g > 255 ? 255 : g);
            blue[k] = (uint8_t)(b < 0 ? 0 : b > 255 ? 255 : b);
        }
        uint8_t *out = bytes != NULL ? bytes + (size_t)done * 3 : interleaved;
        for (int k = 0; k < step.count; k++) {
            out[3 * k] = red[k];
            out[3 * k + 1] = green[k];
            out[3 * k + 2] = blue[k];
        }
        if (bytes == NULL) {
            uint32_t *sum = sums + (size_t)done * 3;
            for (int i = 0; i < 3 * step.count; i++) {
                sum[i] += interleaved[i];
            }
        }
    }
}

/// Converts `count` pixels of a deeper tile's row `y` from column `x` into RGB samples shifted up by `shift` (to 16
/// bits, as the interleaved path writes them): written to `samples`, or (`samples` NULL) added to `sums`. Every
/// float operation is libheif's, in its order (no reassociation, no fused multiply-add), so the result is its own;
/// its `clip_f_u16` truncates `value + 0.5` to an integer (here to 32 bits: every value fits) and clamps it. Each
/// step runs a few loops simple enough for the compiler to vectorize: the chroma terms once per chroma sample,
/// spread to the two pixels that share it; the pixels; then the samples interleaved.
static inline void cheif_convert_span_deep(const tile_pixels *tile, int y, int x, int count, int shift,
                                           uint16_t *samples, uint32_t *sums) {
#pragma STDC FP_CONTRACT OFF
    const ycbcr_matrix m = tile->matrix;
    const int top = (1 << m.bits) - 1;
    const int half = 1 << (m.bits - 1);
    const float offset = (float)(16 << (m.bits - 8));
    const uint16_t *luma = (const uint16_t *)(const void *)(tile->luma + (size_t)y * tile->luma_stride);
    const uint16_t *cb_row = (const uint16_t *)(const void *)(tile->cb + (size_t)(y / 2) * tile->cb_stride);
    const uint16_t *cr_row = (const uint16_t *)(const void *)(tile->cr + (size_t)(y / 2) * tile->cr_stride);
    // Per pixel of the step (plus the one before an odd start): the chroma terms, then the samples.
    float red_term[cheif_span_step + 2];
    float green_cb[cheif_span_step + 2];
    float green_cr[cheif_span_step + 2];
    float blue_term[cheif_span_step + 2];
    int32_t red[cheif_span_step];
    int32_t green[cheif_span_step];
    int32_t blue[cheif_span_step];
    for (int done = 0; done < count; done += cheif_span_step) {
        const cheif_step step = cheif_step_at(x, done, count);
        for (int j = 0; j < step.chroma_count; j++) {
            float cb = (float)(cb_row[step.chroma_first + j] - half);
            float cr = (float)(cr_row[step.chroma_first + j] - half);
            if (!m.full_range) {
                cb = cb * 1.1429f;
                cr = cr * 1.1429f;
            }
            const float r = m.r_cr_f * cr;
            const float gb = m.g_cb_f * cb;
            const float gr = m.g_cr_f * cr;
            const float b = m.b_cb_f * cb;
            red_term[2 * j] = r;
            red_term[2 * j + 1] = r;
            green_cb[2 * j] = gb;
            green_cb[2 * j + 1] = gb;
            green_cr[2 * j] = gr;
            green_cr[2 * j + 1] = gr;
            blue_term[2 * j] = b;
            blue_term[2 * j + 1] = b;
        }
        const uint16_t *row = luma + step.first;
        for (int k = 0; k < step.count; k++) {
            float yv = (float)row[k];
            if (!m.full_range) {
                yv = (yv - offset) * 1.1689f;
            }
            int rv = (int)(yv + red_term[k + step.odd] + 0.5f);
            int gv = (int)(yv + green_cb[k + step.odd] + green_cr[k + step.odd] + 0.5f);
            int bv = (int)(yv + blue_term[k + step.odd] + 0.5f);
            rv = rv < 0 ? 0 : rv > top ? top : rv;
            gv = gv < 0 ? 0 : gv > top ? top : gv;
            bv = bv < 0 ? 0 : bv > top ? top : bv;
            red[k] = rv << shift;
            green[k] = gv << shift;
            blue[k] = bv << shift;
        }
        if (samples != NULL) {
            uint16_t *out = samples + (size_t)done * 3;
            for (int k = 0; k < step.count; k++) {
                out[3 * k] = (uint16_t)red[k];
                out[3 * k + 1] = (uint16_t)green[k];
                out[3 * k + 2] = (uint16_t)blue[k];
            }
        } else {
            uint32_t *out = sums + (size_t)done * 3;
            for (int k = 0; k < step.count; k++) {
                out[3 * k] += (uint32_t)red[k];
                out[3 * k + 1] += (uint32_t)green[k];
                out[3 * k + 2] += (uint32_t)blue[k];
            }
        }
    }
}

/// Converts `count` pixels of the planes' row `y` from column `x`, whatever their depth: into `target` (8-bit samples,
/// or deeper ones shifted up by `shift` as native 16-bit), or (`target` NULL) added to `sums`.
static inline void cheif_convert_row(const tile_pixels *tile, int y, int x, int count, int shift, uint8_t *target,
                                     uint32_t *sums) {
    if (tile->matrix.bits == 8) {
        cheif_convert_span(tile, y, x, count, target, sums);
    } else {
        cheif_convert_span_deep(tile, y, x, count, shift, (uint16_t *)(void *)target, sums);
    }
}

#endif
