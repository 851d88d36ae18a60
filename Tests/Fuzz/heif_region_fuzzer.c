// libFuzzer harness for the HEIF region decoder (Sources/C/CHEIFRegion), as the worker calls it
// (Imaging's HEIFRegionDecoder): open the file under the limits, read its layout and profile, then
// decode one square of the stored image — grid or not, any orientation, 8/10-bit, alpha — box-shrunk
// by a factor, or of its thumbnail. The input's first bytes choose the square, the shrink, the
// orientation that places the shrink's boxes, the thumbnail, libheif's own conversion, the extra tile
// threads and the cancellation (fuzz_parameters.h); the rest is the file. Tests/Fuzz/README.md says how to run it.
#include "CHEIFRegion.h"
#include "fuzz_parameters.h"

#include <libheif/heif.h>
#include <stdlib.h>

/// Smaller than the worker's ImageLimits.maxPixels so each run stays fast: the same code, less work.
#define MAX_PIXELS (8u * 1000u * 1000u)
#define MAX_TILES 4096u
#define MAX_SIDE 768

/// The decode cores a grid's extra tile threads take (as a worker's helpers share them): more than this machine
/// may have, so the threads run whenever the input asks for them.
#define CORES 4
static cheif_cores *cores;

/// libheif loads its decoder plugins once, as in the worker (libvips initialises libheif at start);
/// without this every run would load and unload them. The cores' memory file is made once too.
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    heif_init(NULL);
    cores = cheif_cores_open(cheif_cores_create(), CORES);
    if (cores == NULL) {
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_parameters parameters = fuzz_parameters_take(&data, &size);
    const uint8_t flags = fuzz_byte(&parameters);
    const uint8_t shrink_byte = fuzz_byte(&parameters);

    cheif_limits limits = {.max_pixels = MAX_PIXELS, .max_tiles = MAX_TILES};
    cheif_file *file = NULL;
    cheif_info info;
    if (cheif_open(data, size, &limits, &file, &info) != CHEIF_OK) {
        if (file != NULL) {
            abort(); // the header's contract: no file unless CHEIF_OK
        }
        return 0;
    }
    if (info.icc_length > 0 && info.icc_length < (1u << 24)) {
        unsigned char *icc = malloc(info.icc_length);
        if (icc != NULL && cheif_copy_icc(file, icc, info.icc_length) == CHEIF_OK) {
            uint8_t sum = 0;
            for (size_t i = 0; i < info.icc_length; i++) {
                sum += icc[i];
            }
            fuzz_consume(sum);
        }
        free(icc);
    }

    cheif_region_request request = {0};
    request.thumbnail = (flags & 1) && info.thumbnail_width > 0;
    request.libheif_conversion = (flags & 2) != 0;
    // A grid's tiles on extra threads (the worker's default whenever a core is idle).
    if (flags & 4) {
        request.cores = cores;
        request.extra_threads = CORES - 1;
    }
    int cancel = (flags & 0xf0) == 0xf0;
    request.cancel = &cancel;
    // Box shrink factors as ShrinkOnLoad picks them (mostly 1–8), now and then up to the decoder's 64.
    request.shrink = shrink_byte < 224 ? 1 + shrink_byte % 8 : 1 + shrink_byte % 64;
    const int width = request.thumbnail ? info.thumbnail_width : info.width;
    const int height = request.thumbnail ? info.thumbnail_height : info.height;
    if (request.shrink > width || request.shrink > height) {
        request.shrink = 1;
    }
    const int orientation = 1 + (flags >> 2) % 8;
    int far_x = 0;
    int far_y = 0;
    fuzz_orientation_reverses(orientation, &far_x, &far_y);
    request.origin_x = far_x ? width % request.shrink : 0;
    request.origin_y = far_y ? height % request.shrink : 0;
    const int shrunk_width = (width - request.origin_x) / request.shrink;
    const int shrunk_height = (height - request.origin_y) / request.shrink;
    int side_limit = shrunk_width < shrunk_height ? shrunk_width : shrunk_height;
    if (side_limit > MAX_SIDE) {
        side_limit = MAX_SIDE;
    }
    if (side_limit < 1) {
        cheif_close(file);
        return 0;
    }
    request.width = request.height = 1 + fuzz_position(&parameters, side_limit);
    request.x = fuzz_position(&parameters, shrunk_width - request.width + 1);
    request.y = fuzz_position(&parameters, shrunk_height - request.height + 1);
    if ((flags & 0xf0) == 0x10) {
        // A request the caller got wrong: refused, never read out of bounds.
        request.x += (int)(int8_t)fuzz_byte(&parameters);
        request.height += (int)(int8_t)fuzz_byte(&parameters);
        request.origin_x += (int)(int8_t)fuzz_byte(&parameters) % 4;
    }

    cheif_region_result result;
    cheif_status status = cheif_decode_region(file, &request, &result);
    if (status == CHEIF_OK) {
        if (result.width != request.width || result.height != request.height ||
            result.length != (size_t)result.width * result.height * result.bands * (result.sixteen_bit ? 2 : 1)) {
            abort(); // the region is the size asked for
        }
        const uint8_t *pixels = result.pixels;
        uint8_t sum = 0;
        for (size_t i = 0; i < result.length; i++) {
            sum += pixels[i];
        }
        fuzz_consume(sum);
    } else if (result.pixels != NULL) {
        abort();
    }
    free(result.pixels);
    cheif_close(file);
    return 0;
}
