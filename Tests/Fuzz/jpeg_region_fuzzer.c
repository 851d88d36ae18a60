// libFuzzer harness for the JPEG region decoder (Sources/C/CJPEGRegion), as the worker calls it
// (Imaging's JPEGRegionDecoder and DecoderSelection): read the header, refuse a bomb from its declared
// size, then decode one rectangle at a DCT scale of 1/1–1/8, and for a progressive file its DC preview
// (the face detector's small decode). The input's first bytes choose the
// scale, the rectangle, the cancellation and the worker's orientation (fuzz_parameters.h); the rest
// is the JPEG. Tests/Fuzz/README.md says how to build and run it.
#include "CJPEGRegion.h"
#include "fuzz_parameters.h"

#include <stdlib.h>

/// The worker refuses more pixels than this from the header before any decode (ImageLimits.maxPixels
/// is larger; a smaller bound keeps each run fast without leaving a path out).
#define MAX_PIXELS (24u * 1000u * 1000u)
/// The largest square the worker decodes by region (DecoderSelection.maxRegionPixels is 16 MP); the
/// harness keeps its side smaller for speed: a larger one runs the same code longer.
#define MAX_SIDE 1024

/// Reads every byte a decode returned and frees it; aborts if a failure returned a buffer.
static void check_result(cjpeg_status status, cjpeg_region_result *result) {
    if (status == CJPEG_OK) {
        // Every byte of the result is read and decides a branch: valgrind (and MSan) report any byte the
        // decoder left unwritten.
        uint8_t sum = 0;
        size_t length = (size_t)result->width * (size_t)result->height * (size_t)result->bands;
        for (size_t i = 0; i < length; i++) {
            sum += result->pixels[i];
        }
        for (size_t i = 0; i < result->icc_length; i++) {
            sum += result->icc[i];
        }
        fuzz_consume(sum);
    } else if (result->pixels != NULL || result->icc != NULL) {
        abort(); // the header's contract: both NULL unless CJPEG_OK
    }
    cjpeg_free(result->pixels);
    cjpeg_free(result->icc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_parameters parameters = fuzz_parameters_take(&data, &size);
    const uint8_t flags = fuzz_byte(&parameters);

    cjpeg_header header;
    if (cjpeg_read_header(data, size, &header) != CJPEG_OK) {
        return 0;
    }
    uint64_t pixels = (uint64_t)header.width * (uint64_t)header.height;
    if (pixels == 0 || pixels > MAX_PIXELS) {
        return 0;
    }
    // DecoderSelection sends these to libvips; the decoder must still refuse or decode them safely,
    // which small images prove as well as large ones (a progressive bomb only costs time).
    const int selected = header.precision == 8 && header.components != 4 && !header.multiscan &&
                         !header.arithmetic &&
                         ((header.colour == CJPEG_COLOUR_GREY && header.components == 1) ||
                          (header.colour == CJPEG_COLOUR_YCBCR && header.components == 3) ||
                          (header.colour == CJPEG_COLOUR_RGB && header.components == 3));
    if (!selected && pixels > 256u * 256u) {
        return 0;
    }

    static const int scales[4] = {1, 2, 4, 8};
    const int scale = scales[flags & 3];
    const int scaled_width = (int)((header.width + scale - 1) / scale);
    const int scaled_height = (int)((header.height + scale - 1) / scale);
    int side_limit = scaled_width < scaled_height ? scaled_width : scaled_height;
    if (side_limit > MAX_SIDE) {
        side_limit = MAX_SIDE;
    }
    cjpeg_region_request request = {.scale_denom = scale};
    request.width = request.height = 1 + fuzz_position(&parameters, side_limit);
    request.x = fuzz_position(&parameters, scaled_width - request.width + 1);
    request.y = fuzz_position(&parameters, scaled_height - request.height + 1);
    if (flags & 4) {
        // A request the caller got wrong (outside the image, a bad scale): refused, never read out of bounds.
        request.x += (int)(int8_t)fuzz_byte(&parameters);
        request.width += (int)(int8_t)fuzz_byte(&parameters);
        if (flags & 0x10) {
            request.scale_denom = (flags >> 5) & 7; // 0–7: 1, 2 and 4 valid, the others not
        }
    }
    // The worker's orientation only decides which stored rectangle it asks for: any rectangle above.
    int cancel = (flags & 8) != 0;
    request.cancel = &cancel;

    cjpeg_region_result result;
    check_result(cjpeg_decode_region(data, size, &request, &result), &result);
    if (header.progressive) {
        // The face detector's look at a large progressive file (Imaging's SmallDecode through
        // JPEGRegionDecoder.dcPreview): the DC scans alone, at 1/8.
        check_result(cjpeg_decode_dc_preview(data, size, &cancel, &result), &result);
    }
    return 0;
}
