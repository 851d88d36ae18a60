// The request parameters a harness takes from the front of its input (Tests/Fuzz/README.md): the
// first FUZZ_PARAMETER_BYTES bytes choose the region, scale and orientation, the rest is the file.
// Seeds are files with such a prefix (scripts/fuzz.sh writes it), so the fuzzer mutates both.
#pragma once
#include <stddef.h>
#include <stdint.h>

#define FUZZ_PARAMETER_BYTES 8

typedef struct {
    const uint8_t *bytes;
    /// Parameter bytes read so far; past the prefix every read is 0.
    size_t at;
    size_t count;
} fuzz_parameters;

static inline fuzz_parameters fuzz_parameters_take(const uint8_t **data, size_t *size) {
    fuzz_parameters parameters = {*data, 0, *size < FUZZ_PARAMETER_BYTES ? *size : FUZZ_PARAMETER_BYTES};
    *data += parameters.count;
    *size -= parameters.count;
    return parameters;
}

static inline uint8_t fuzz_byte(fuzz_parameters *parameters) {
    return parameters->at < parameters->count ? parameters->bytes[parameters->at++] : 0;
}

/// A position in [0, extent) from one byte: 0 and the far end are as likely as any other.
static inline int fuzz_position(fuzz_parameters *parameters, int extent) {
    return extent <= 1 ? 0 : (int)((int64_t)fuzz_byte(parameters) * (extent - 1) / 255);
}

/// The worker's orientations (EXIF 1–8) decide at which edge the box shrink's boxes start: at the far
/// edge of an axis the orientation reverses (HEIFRegionDecoder.ShrunkRegion in Swift).
static inline void fuzz_orientation_reverses(int orientation, int *x, int *y) {
    // EXIF 2: mirror left-right; 3: rotate 180; 4: mirror top-bottom; 5: transpose; 6: rotate 90 CW;
    // 7: transverse; 8: rotate 90 CCW. The displayed origin's stored pixel: (x far, y far).
    static const int reverses[9][2] = {{0, 0}, {0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}, {0, 1}, {1, 1}, {1, 0}};
    *x = reverses[orientation][0];
    *y = reverses[orientation][1];
}

/// A branch on `value`, so a memory checker sees where it came from.
static inline void fuzz_consume(uint8_t value) {
    static volatile int sink;
    if (value == 0x5a) {
        sink++;
    }
}
