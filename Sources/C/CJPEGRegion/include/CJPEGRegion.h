// A region-of-interest JPEG decoder on libjpeg(-turbo)'s API, for the Imaging module.
//
// Decodes only the pixels of one rectangle, at a DCT scale of 1/1, 1/2, 1/4 or 1/8: the rows above
// it are skipped without the inverse DCT (jpeg_skip_scanlines), only the iMCU columns that cover it
// are decoded (jpeg_crop_scanline), and reading stops after its last row (jpeg_abort_decompress).
//
// Every libjpeg error is caught here (setjmp/longjmp inside this file only): no call exits the
// process or unwinds through the caller's frames. Damaged data is treated as libvips' jpegload
// treats it with fail_on=error, so both decoders refuse the same files: running out of data is an
// error, other libjpeg warnings ("Corrupt JPEG data: N extraneous bytes before marker") are
// tolerated unless there are 100 of them.
//
// libjpeg's types stay inside the implementation: this header uses plain C types only.
#pragma once
#include <stddef.h>

/// What a call ended with.
typedef enum {
    CJPEG_OK = 0,
    /// libjpeg refused the data (corrupt, truncated, unsupported). `message` says why.
    CJPEG_ERROR = 1,
    /// An allocation failed (libjpeg's or the output buffer's).
    CJPEG_NO_MEMORY = 2,
    /// The cancellation flag was set while decoding.
    CJPEG_CANCELLED = 3,
    /// The file or the request is outside what this decoder handles (a colour space other than
    /// grey or RGB output, a region outside the scaled image, a bad scale). `message` says which.
    CJPEG_UNSUPPORTED = 4,
} cjpeg_status;

/// libjpeg's colour spaces, as far as the caller's decision needs them.
typedef enum {
    CJPEG_COLOUR_OTHER = 0,
    CJPEG_COLOUR_GREY = 1,
    CJPEG_COLOUR_RGB = 2,
    CJPEG_COLOUR_YCBCR = 3,
    CJPEG_COLOUR_CMYK = 4,
    CJPEG_COLOUR_YCCK = 5,
} cjpeg_colour;

/// The longest message (libjpeg's JMSG_LENGTH_MAX is 200).
#define CJPEG_MESSAGE_LENGTH 256

/// What the header says, read without decoding any pixel.
typedef struct {
    int width;
    int height;
    /// Components in the file (1 grey, 3 YCbCr/RGB, 4 CMYK/YCCK).
    int components;
    cjpeg_colour colour;
    /// More than one scan (progressive, or multi-scan sequential): libjpeg buffers every
    /// coefficient of the image before the first row comes out.
    int multiscan;
    int progressive;
    /// Arithmetic rather than Huffman entropy coding.
    int arithmetic;
    /// Bits per sample (8 for nearly every JPEG; 12 and lossless are not decodable here).
    int precision;
    /// The Adobe APP14 marker's transform (0 none, 1 YCbCr, 2 YCCK), or -1 without the marker.
    int adobe_transform;
    /// The largest horizontal and vertical sampling factors (the iMCU is 8× these, unscaled).
    int max_h_sampling;
    int max_v_sampling;
    char message[CJPEG_MESSAGE_LENGTH];
} cjpeg_header;

/// Reads the header only. Returns CJPEG_OK and fills `header`, or CJPEG_ERROR / CJPEG_NO_MEMORY
/// with `header->message` set.
cjpeg_status cjpeg_read_header(const unsigned char *data, size_t length, cjpeg_header *header);

/// One region to decode.
typedef struct {
    /// 1, 2, 4 or 8: the image is decoded at 1/scale_denom of its size (libjpeg rounds up).
    int scale_denom;
    /// The rectangle in scaled pixels; it must lie inside the scaled image.
    int x;
    int y;
    int width;
    int height;
    /// Polled every few rows (and during libjpeg's progress callbacks): nonzero stops the decode
    /// with CJPEG_CANCELLED. May be NULL. Set it with cjpeg_flag_set from any thread.
    const int *cancel;
} cjpeg_region_request;

/// What a region decode produced.
typedef struct {
    /// `width × height × bands` bytes, row by row, band-interleaved (RGB, or one grey band);
    /// malloc'd, owned by the caller (free with cjpeg_free, or hand it to something that frees
    /// with free()). NULL unless the status is CJPEG_OK.
    unsigned char *pixels;
    int width;
    int height;
    int bands;
    /// The whole image's size at this scale, as libjpeg computes it (rounded up).
    int scaled_width;
    int scaled_height;
    /// The columns libjpeg actually decoded (scaled pixels), after iMCU alignment: the region
    /// lies inside [decoded_x, decoded_x + decoded_width).
    int decoded_x;
    int decoded_width;
    /// The embedded ICC profile (APP2 ICC_PROFILE markers, reassembled), malloc'd; NULL if none.
    unsigned char *icc;
    size_t icc_length;
    /// libjpeg warnings seen (tolerated below 100, like libvips' jpegload).
    int warnings;
    /// The error (or, with CJPEG_OK, the first warning), empty if none.
    char message[CJPEG_MESSAGE_LENGTH];
} cjpeg_region_result;

/// Decodes `request`'s rectangle of the JPEG in `data`. On CJPEG_OK the caller owns
/// `result->pixels` and `result->icc`; on any other status both are NULL.
cjpeg_status cjpeg_decode_region(const unsigned char *data, size_t length, const cjpeg_region_request *request,
                                 cjpeg_region_result *result);

/// The whole image at 1/8 of its size from a progressive JPEG's DC coefficients alone (CJPEGDCPreview.c): the
/// scans are read only until every component's DC has arrived (the first scan or two, a few per cent of the
/// file), keeping one coefficient per block, and turned into pixels as libjpeg's 1/8 scaling would (which uses
/// nothing but DC). The cheapest look at a progressive photo, for the face detector (docs/ARCHITECTURE.md §2,
/// "Faces"): the later scans' AC coefficients and the lowest DC bits are never decoded, so the pixels are a
/// slightly coarser 1/8 image than a whole decode gives, and libjpeg's whole-image coefficient buffer is never
/// allocated. The ICC profile is not read. CJPEG_UNSUPPORTED for a file that is not progressive, Huffman-coded
/// and 8-bit (a sequential file has no cheaper 1/8 image than its whole entropy pass), whose output is neither
/// RGB nor grey, or whose sampling factors do not divide the largest. `cancel` may be NULL. On CJPEG_OK the
/// caller owns `result->pixels` (`width × height × bands`); `scaled_width/height` equal `width/height`.
cjpeg_status cjpeg_decode_dc_preview(const unsigned char *data, size_t length, const int *cancel,
                                     cjpeg_region_result *result);

/// Frees a buffer this module returned (pixels, icc).
void cjpeg_free(void *pointer);

/// Atomically sets or reads a cancellation flag shared with a decode on another thread.
void cjpeg_flag_set(int *flag, int value);
int cjpeg_flag_get(const int *flag);

/// The loaded libjpeg-turbo's version ("2.1.5"), read from the shared object jpeg_std_error comes from,
/// into `buffer` (NUL-terminated). Returns 1, or 0 when it is not found (not libjpeg-turbo, or linked
/// statically).
int cjpeg_library_version(char *buffer, size_t size);
