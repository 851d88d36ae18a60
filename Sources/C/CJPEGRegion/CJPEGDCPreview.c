// The DC preview of a progressive JPEG (cjpeg_decode_dc_preview, CJPEGRegion.h), for the face detector's look at
// a progressive photo (docs/ARCHITECTURE.md §2, "Faces").
//
// libjpeg can give the same 1/8 image from the DC scans (buffered-image mode, output at 1/8 after the DC scans),
// but a progressive decompressor allocates and zeroes a coefficient buffer for the whole image first, 2 bytes per
// coefficient, 72 MB for a 24 MP photo: its page faults and zeroing cost several times what the DC scans' entropy
// decode does. The 1/8 image needs one coefficient per block, so this file reads the markers and the DC scans
// itself and keeps only those: about 1/64 of the memory, and a 24 MP photo's DC scan decoded in a few
// milliseconds. libjpeg still reads the header first (cjpeg_read_header): whether the file is progressive,
// Huffman-coded, 8-bit, and its colour space, as libjpeg (and so libvips) would decode it.
//
// The pixels are libjpeg's 1/8 scaling of the same coefficients: (DC × quantiser + 4) >> 3 + 128 per block,
// clamped, chroma repeated over the blocks of luma it covers, YCbCr turned into RGB with libjpeg's fixed-point
// constants. Hostile input is refused with a status, never read out of bounds: every length and index is checked
// against the data and the frame before use.
#include "CJPEGRegion.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// Grey, or three components (YCbCr or RGB): what the header check lets through.
#define DC_MAX_COMPONENTS 3
/// The largest frame decoded (the worker refuses far smaller ones from the header before any decode).
#define DC_MAX_PIXELS ((uint64_t)1 << 30)
/// Bits of code looked up in one step; longer codes are decoded length by length.
#define DC_LOOKUP_BITS 9

typedef struct {
    /// By the next DC_LOOKUP_BITS bits: the code's length (0: longer than DC_LOOKUP_BITS) and its symbol.
    uint8_t lookup_length[1 << DC_LOOKUP_BITS];
    uint8_t lookup_symbol[1 << DC_LOOKUP_BITS];
    /// By code length: the largest code of that length (-1: none), and where its symbols start in `symbols`
    /// minus its smallest code.
    int32_t max_code[17];
    int32_t symbol_offset[17];
    uint8_t symbols[256];
    int defined;
} huffman_table;

typedef struct {
    int id;
    int h;
    int v;
    int quant_table;
    /// The DC quantiser, latched at the component's first scan as libjpeg does.
    int quant_dc;
    int latched;
    /// The component's own blocks (a scan of this component alone covers these).
    int width_blocks;
    int height_blocks;
    /// The blocks stored: whole MCUs (an interleaved scan also codes the padding blocks).
    int stride;
    int rows;
    int32_t *dc;
    /// A first DC scan of this component has been read.
    int has_dc;
    int predictor;
} component;

typedef struct {
    const uint8_t *data;
    size_t length;
    size_t position;
    const int *cancel;
    char message[CJPEG_MESSAGE_LENGTH];

    /// The entropy-coded bits, most significant first; `bit_count` of them are valid.
    uint64_t bits;
    int bit_count;
    /// A marker ended the scan's data: zeros are read from here on, as libjpeg does.
    int at_marker;

    int width;
    int height;
    int component_count;
    int max_h;
    int max_v;
    int mcus_per_row;
    int mcu_rows;
    int restart_interval;
    int seen_frame;
    component components[DC_MAX_COMPONENTS];
    int quant_dc[4];
    int quant_defined[4];
    huffman_table dc_tables[4];
} dc_decoder;

static cjpeg_status fail(dc_decoder *d, cjpeg_status status, const char *message) {
    snprintf(d->message, sizeof(d->message), "%s", message);
    return status;
}

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        cjpeg_status status_ = (call);                                                                                 \
        if (status_ != CJPEG_OK) {                                                                                     \
            return status_;                                                                                            \
        }                                                                                                              \
    } while (0)

// MARK: Markers

static cjpeg_status read_u8(dc_decoder *d, int *value) {
    if (d->position >= d->length) {
        return fail(d, CJPEG_ERROR, "Premature end of JPEG file");
    }
    *value = d->data[d->position++];
    return CJPEG_OK;
}

static cjpeg_status read_u16(dc_decoder *d, int *value) {
    int high, low;
    CHECK(read_u8(d, &high));
    CHECK(read_u8(d, &low));
    *value = (high << 8) | low;
    return CJPEG_OK;
}

/// A marker segment's payload length (its length field minus the field's own 2 bytes), checked against the data.
static cjpeg_status read_segment_length(dc_decoder *d, int *payload) {
    int length;
    CHECK(read_u16(d, &length));
    if (length < 2) {
        return fail(d, CJPEG_ERROR, "Bogus marker length");
    }
    if ((size_t)(length - 2) > d->length - d->position) {
        return fail(d, CJPEG_ERROR, "Premature end of JPEG file");
    }
    *payload = length - 2;
    return CJPEG_OK;
}

/// The next marker's code: bytes before its 0xFF are skipped (libjpeg warns and does the same; so is a scan's
/// entropy-coded data, whose stuffed 0xFF 0x00 is not a marker), and so are fill bytes (0xFF 0xFF …).
static cjpeg_status next_marker(dc_decoder *d, int *code) {
    for (;;) {
        int byte;
        do {
            CHECK(read_u8(d, &byte));
        } while (byte != 0xFF);
        do {
            CHECK(read_u8(d, &byte));
        } while (byte == 0xFF);
        if (byte != 0) {
            *code = byte;
            return CJPEG_OK;
        }
    }
}

static cjpeg_status read_quant_tables(dc_decoder *d, int payload) {
    const size_t end = d->position + (size_t)payload;
    while (d->position < end) {
        int info;
        CHECK(read_u8(d, &info));
        const int precision = info >> 4, index = info & 15;
        if (index > 3 || precision > 1) {
            return fail(d, CJPEG_ERROR, "Bogus DQT");
        }
        const size_t size = precision == 0 ? 64 : 128;
        if (size > end - d->position) {
            return fail(d, CJPEG_ERROR, "Bogus DQT");
        }
        // Entry 0 is the DC quantiser in zigzag order as in natural order.
        const uint8_t *entry = d->data + d->position;
        d->quant_dc[index] = precision == 0 ? entry[0] : (entry[0] << 8) | entry[1];
        d->quant_defined[index] = 1;
        d->position += size;
    }
    return CJPEG_OK;
}

/// Builds `table` from a DHT's 16 counts and its symbols, refusing what libjpeg refuses (more codes of a length
/// than fit, a DC category above 15).
static cjpeg_status build_huffman(dc_decoder *d, huffman_table *table, const uint8_t counts[16], const uint8_t *symbols,
                                  int total) {
    memset(table, 0, sizeof(*table));
    memcpy(table->symbols, symbols, (size_t)total);
    for (int i = 0; i < total; i++) {
        if (symbols[i] > 15) {
            return fail(d, CJPEG_ERROR, "Bogus Huffman table definition");
        }
    }
    int32_t code = 0;
    int index = 0;
    for (int length = 1; length <= 16; length++) {
        const int count = counts[length - 1];
        table->symbol_offset[length] = index - code;
        for (int k = 0; k < count; k++, index++, code++) {
            if (code >= ((int32_t)1 << length)) {
                return fail(d, CJPEG_ERROR, "Bogus Huffman table definition");
            }
            if (length <= DC_LOOKUP_BITS) {
                const int shift = DC_LOOKUP_BITS - length;
                const int first = code << shift;
                for (int fill = 0; fill < (1 << shift); fill++) {
                    table->lookup_length[first + fill] = (uint8_t)length;
                    table->lookup_symbol[first + fill] = symbols[index];
                }
            }
        }
        table->max_code[length] = count > 0 ? code - 1 : -1;
        // All-ones codes are reserved: the codes of each length must fit in it with one to spare.
        if (code >= ((int32_t)1 << length)) {
            return fail(d, CJPEG_ERROR, "Bogus Huffman table definition");
        }
        code <<= 1;
    }
    table->defined = 1;
    return CJPEG_OK;
}

static cjpeg_status read_huffman_tables(dc_decoder *d, int payload) {
    const size_t end = d->position + (size_t)payload;
    while (d->position < end) {
        int info;
        CHECK(read_u8(d, &info));
        const int table_class = info >> 4, index = info & 15;
        if (table_class > 1 || index > 3 || 16 > end - d->position) {
            return fail(d, CJPEG_ERROR, "Bogus DHT");
        }
        uint8_t counts[16];
        memcpy(counts, d->data + d->position, 16);
        d->position += 16;
        int total = 0;
        for (int i = 0; i < 16; i++) {
            total += counts[i];
        }
        if (total > 256 || (size_t)total > end - d->position) {
            return fail(d, CJPEG_ERROR, "Bogus DHT");
        }
        // The AC tables are never used here.
        if (table_class == 0) {
            CHECK(build_huffman(d, &d->dc_tables[index], counts, d->data + d->position, total));
        }
        d->position += (size_t)total;
    }
    return CJPEG_OK;
}

static cjpeg_status read_frame(dc_decoder *d, int payload) {
    if (d->seen_frame) {
        return fail(d, CJPEG_ERROR, "Invalid JPEG file structure: two SOF markers");
    }
    if (payload < 6) {
        return fail(d, CJPEG_ERROR, "Bogus marker length");
    }
    int precision, count;
    CHECK(read_u8(d, &precision));
    CHECK(read_u16(d, &d->height));
    CHECK(read_u16(d, &d->width));
    CHECK(read_u8(d, &count));
    if (precision != 8) {
        return fail(d, CJPEG_UNSUPPORTED, "not an 8-bit JPEG");
    }
    if (d->width == 0 || d->height == 0 || (uint64_t)d->width * (uint64_t)d->height > DC_MAX_PIXELS) {
        return fail(d, CJPEG_UNSUPPORTED, "image size outside the DC preview's range");
    }
    if (count != d->component_count || payload != 6 + 3 * count) {
        return fail(d, CJPEG_ERROR, "Bogus SOF marker");
    }
    d->max_h = 1;
    d->max_v = 1;
    for (int i = 0; i < count; i++) {
        component *c = &d->components[i];
        int sampling;
        CHECK(read_u8(d, &c->id));
        CHECK(read_u8(d, &sampling));
        CHECK(read_u8(d, &c->quant_table));
        c->h = sampling >> 4;
        c->v = sampling & 15;
        if (c->h < 1 || c->h > 4 || c->v < 1 || c->v > 4 || c->quant_table > 3) {
            return fail(d, CJPEG_ERROR, "Bogus sampling factors");
        }
        d->max_h = c->h > d->max_h ? c->h : d->max_h;
        d->max_v = c->v > d->max_v ? c->v : d->max_v;
    }
    const int mcu_width = 8 * d->max_h, mcu_height = 8 * d->max_v;
    d->mcus_per_row = (d->width + mcu_width - 1) / mcu_width;
    d->mcu_rows = (d->height + mcu_height - 1) / mcu_height;
    for (int i = 0; i < count; i++) {
        component *c = &d->components[i];
        // A chroma block covering a fraction of luma blocks has no 1/8 pixel of its own.
        if (d->max_h % c->h != 0 || d->max_v % c->v != 0) {
            return fail(d, CJPEG_UNSUPPORTED, "sampling factors the DC preview does not take");
        }
        c->width_blocks = (int)(((int64_t)d->width * c->h + 8 * d->max_h - 1) / (8 * d->max_h));
        c->height_blocks = (int)(((int64_t)d->height * c->v + 8 * d->max_v - 1) / (8 * d->max_v));
        c->stride = d->mcus_per_row * c->h;
        c->rows = d->mcu_rows * c->v;
        c->dc = calloc((size_t)c->stride * (size_t)c->rows, sizeof(int32_t));
        if (c->dc == NULL) {
            return fail(d, CJPEG_NO_MEMORY, "cannot allocate the DC coefficients");
        }
    }
    d->seen_frame = 1;
    return CJPEG_OK;
}

// MARK: Entropy-coded bits

/// Tops the bit buffer up to at least 32 bits: a marker ends the data (zeros follow, as in libjpeg); the end of
/// the file in the middle of a scan is an error, as in the region decoder's source.
static cjpeg_status fill_bits(dc_decoder *d) {
    while (d->bit_count < 32) {
        int byte = 0;
        if (!d->at_marker) {
            if (d->position >= d->length) {
                return fail(d, CJPEG_ERROR, "Premature end of JPEG file");
            }
            byte = d->data[d->position];
            if (byte == 0xFF) {
                // 0xFF 0x00 is a stuffed 0xFF; fill bytes may precede a marker.
                size_t next = d->position + 1;
                while (next < d->length && d->data[next] == 0xFF) {
                    next++;
                }
                if (next >= d->length) {
                    return fail(d, CJPEG_ERROR, "Premature end of JPEG file");
                }
                if (d->data[next] == 0) {
                    d->position = next + 1;
                } else {
                    // The marker stays for the marker reader.
                    d->at_marker = 1;
                    byte = 0;
                }
            } else {
                d->position++;
            }
        }
        d->bits |= (uint64_t)byte << (56 - d->bit_count);
        d->bit_count += 8;
    }
    return CJPEG_OK;
}

static cjpeg_status get_bits(dc_decoder *d, int count, int *value) {
    if (count == 0) {
        *value = 0;
        return CJPEG_OK;
    }
    if (d->bit_count < count) {
        CHECK(fill_bits(d));
    }
    *value = (int)(d->bits >> (64 - count));
    d->bits <<= count;
    d->bit_count -= count;
    return CJPEG_OK;
}

static cjpeg_status decode_symbol(dc_decoder *d, const huffman_table *table, int *symbol) {
    if (d->bit_count < 16) {
        CHECK(fill_bits(d));
    }
    const int peek = (int)(d->bits >> (64 - DC_LOOKUP_BITS));
    const int length = table->lookup_length[peek];
    if (length > 0) {
        *symbol = table->lookup_symbol[peek];
        d->bits <<= length;
        d->bit_count -= length;
        return CJPEG_OK;
    }
    const int32_t code16 = (int32_t)(d->bits >> 48);
    for (int bits = DC_LOOKUP_BITS + 1; bits <= 16; bits++) {
        const int32_t code = code16 >> (16 - bits);
        if (table->max_code[bits] >= 0 && code <= table->max_code[bits]) {
            const int32_t index = table->symbol_offset[bits] + code;
            if (index < 0 || index > 255) {
                break;
            }
            *symbol = table->symbols[index];
            d->bits <<= bits;
            d->bit_count -= bits;
            return CJPEG_OK;
        }
    }
    return fail(d, CJPEG_ERROR, "Corrupt JPEG data: bad Huffman code");
}

/// At a restart interval's end: the bits left in the byte are dropped, the RSTn marker read, the predictors reset.
static cjpeg_status restart(dc_decoder *d, int scan_count, component *const *scan) {
    d->bits = 0;
    d->bit_count = 0;
    if (!d->at_marker) {
        // The marker should follow the data at once; a corrupt file may put bytes before it.
        int code;
        CHECK(next_marker(d, &code));
        d->position -= 2;
    }
    if (d->position + 1 < d->length && d->data[d->position] == 0xFF && d->data[d->position + 1] >= 0xD0 &&
        d->data[d->position + 1] <= 0xD7) {
        d->position += 2;
        d->at_marker = 0;
    }
    // Any other marker ends the scan's data: zeros follow (at_marker stays set).
    for (int i = 0; i < scan_count; i++) {
        scan[i]->predictor = 0;
    }
    return CJPEG_OK;
}

// MARK: DC scans

/// One block's DC in a scan: the first scan's difference from the predictor, or a refinement's one bit.
static cjpeg_status decode_block(dc_decoder *d, component *c, const huffman_table *table, int32_t *block, int refine,
                                 int point) {
    if (refine) {
        int bit;
        CHECK(get_bits(d, 1, &bit));
        if (bit) {
            *block |= (int32_t)1 << point;
        }
        return CJPEG_OK;
    }
    int category;
    CHECK(decode_symbol(d, table, &category));
    int difference = 0;
    if (category > 0) {
        int raw;
        CHECK(get_bits(d, category, &raw));
        // The sign is the top bit of the raw value: below half the range, the difference is negative.
        difference = raw < (1 << (category - 1)) ? raw - (1 << category) + 1 : raw;
    }
    const int value = c->predictor + difference;
    if (value < -32768 || value > 32767) {
        return fail(d, CJPEG_ERROR, "Corrupt JPEG data: DC coefficient out of range");
    }
    c->predictor = value;
    *block = (int32_t)value * ((int32_t)1 << point);
    return CJPEG_OK;
}

static int cancelled(const dc_decoder *d) {
    return cjpeg_flag_get(d->cancel);
}

static cjpeg_status decode_scan(dc_decoder *d, int scan_count, component *const *scan, const int *tables, int refine,
                                int point) {
    for (int i = 0; i < scan_count; i++) {
        scan[i]->predictor = 0;
    }
    d->bits = 0;
    d->bit_count = 0;
    d->at_marker = 0;
    int restarts_left = d->restart_interval;
    if (scan_count == 1) {
        // A scan of one component codes its own blocks alone, row by row.
        component *c = scan[0];
        const huffman_table *table = &d->dc_tables[tables[0]];
        for (int y = 0; y < c->height_blocks; y++) {
            if (cancelled(d)) {
                return fail(d, CJPEG_CANCELLED, "jpeg region decode cancelled");
            }
            for (int x = 0; x < c->width_blocks; x++) {
                if (d->restart_interval > 0) {
                    if (restarts_left == 0) {
                        CHECK(restart(d, scan_count, scan));
                        restarts_left = d->restart_interval;
                    }
                    restarts_left--;
                }
                CHECK(decode_block(d, c, table, &c->dc[(size_t)y * (size_t)c->stride + (size_t)x], refine, point));
            }
        }
    } else {
        for (int row = 0; row < d->mcu_rows; row++) {
            if (cancelled(d)) {
                return fail(d, CJPEG_CANCELLED, "jpeg region decode cancelled");
            }
            for (int column = 0; column < d->mcus_per_row; column++) {
                if (d->restart_interval > 0) {
                    if (restarts_left == 0) {
                        CHECK(restart(d, scan_count, scan));
                        restarts_left = d->restart_interval;
                    }
                    restarts_left--;
                }
                for (int i = 0; i < scan_count; i++) {
                    component *c = scan[i];
                    const huffman_table *table = &d->dc_tables[tables[i]];
                    for (int by = 0; by < c->v; by++) {
                        const size_t y = (size_t)row * (size_t)c->v + (size_t)by;
                        for (int bx = 0; bx < c->h; bx++) {
                            const size_t x = (size_t)column * (size_t)c->h + (size_t)bx;
                            CHECK(decode_block(d, c, table, &c->dc[y * (size_t)c->stride + x], refine, point));
                        }
                    }
                }
            }
        }
    }
    // The next marker is found by the marker reader, from wherever the bits stopped.
    return CJPEG_OK;
}

/// A start of scan: a DC scan is decoded; any other scan (AC) is left for the marker reader to pass over.
/// `decoded` is set for a DC scan.
static cjpeg_status read_scan(dc_decoder *d, int payload) {
    if (!d->seen_frame) {
        return fail(d, CJPEG_ERROR, "Invalid JPEG file structure: SOS before SOF");
    }
    int count;
    CHECK(read_u8(d, &count));
    if (count < 1 || count > d->component_count || payload != 4 + 2 * count) {
        return fail(d, CJPEG_ERROR, "Bogus SOS");
    }
    component *scan[DC_MAX_COMPONENTS];
    int tables[DC_MAX_COMPONENTS];
    for (int i = 0; i < count; i++) {
        int id, selectors;
        CHECK(read_u8(d, &id));
        CHECK(read_u8(d, &selectors));
        scan[i] = NULL;
        for (int k = 0; k < d->component_count; k++) {
            if (d->components[k].id == id) {
                scan[i] = &d->components[k];
            }
        }
        for (int k = 0; k < i; k++) {
            if (scan[k] == scan[i]) {
                scan[i] = NULL;
            }
        }
        if (scan[i] == NULL) {
            return fail(d, CJPEG_ERROR, "Bogus SOS: unknown or repeated component");
        }
        tables[i] = selectors >> 4;
    }
    int start, end, approximation;
    CHECK(read_u8(d, &start));
    CHECK(read_u8(d, &end));
    CHECK(read_u8(d, &approximation));
    if (start != 0) {
        // An AC scan: only one component at a time, and nothing of it is needed.
        return CJPEG_OK;
    }
    const int high = approximation >> 4, point = approximation & 15;
    if (end != 0 || point > 13) {
        return fail(d, CJPEG_ERROR, "Invalid progressive parameters");
    }
    // An interleaved scan's MCU holds at most 10 blocks (the standard's limit, which libjpeg enforces).
    int blocks = 0;
    for (int i = 0; i < count; i++) {
        blocks += scan[i]->h * scan[i]->v;
        if (high != 0) {
            // A refinement reads bare bits: its table selector is not used (nor checked, as in libjpeg).
            tables[i] = 0;
        } else if (tables[i] > 3 || !d->dc_tables[tables[i]].defined) {
            return fail(d, CJPEG_ERROR, "Huffman table not defined");
        }
        component *c = scan[i];
        if (!c->latched) {
            if (!d->quant_defined[c->quant_table]) {
                return fail(d, CJPEG_ERROR, "Quantization table not defined");
            }
            c->quant_dc = d->quant_dc[c->quant_table];
            c->latched = 1;
        }
    }
    if (count > 1 && blocks > 10) {
        return fail(d, CJPEG_ERROR, "Sampling factors too large for interleaved scan");
    }
    CHECK(decode_scan(d, count, scan, tables, high != 0, point));
    if (high == 0) {
        for (int i = 0; i < count; i++) {
            scan[i]->has_dc = 1;
        }
    }
    return CJPEG_OK;
}

static int dc_complete(const dc_decoder *d) {
    for (int i = 0; i < d->component_count; i++) {
        if (!d->components[i].has_dc) {
            return 0;
        }
    }
    return 1;
}

/// Markers and scans until every component's DC has arrived (the first scan or two), or the image ends (what it
/// has is shown: a component without a DC scan is mid-grey).
static cjpeg_status read_dc_scans(dc_decoder *d) {
    // After SOI (which cjpeg_read_header checked).
    d->position = 2;
    for (;;) {
        int code;
        CHECK(next_marker(d, &code));
        if (code == 0xD9) {
            return d->seen_frame ? CJPEG_OK : fail(d, CJPEG_ERROR, "Invalid JPEG file structure: no SOF");
        }
        if ((code >= 0xD0 && code <= 0xD7) || code == 0x01 || code == 0xD8) {
            // No length: restarts between scans (stray), TEM, a second SOI (libjpeg would refuse it; skipped).
            continue;
        }
        int payload;
        CHECK(read_segment_length(d, &payload));
        const size_t end = d->position + (size_t)payload;
        switch (code) {
        case 0xC2:
            CHECK(read_frame(d, payload));
            break;
        case 0xC4:
            CHECK(read_huffman_tables(d, payload));
            break;
        case 0xDB:
            CHECK(read_quant_tables(d, payload));
            break;
        case 0xDD: {
            if (payload != 2) {
                return fail(d, CJPEG_ERROR, "Bogus DRI");
            }
            CHECK(read_u16(d, &d->restart_interval));
            break;
        }
        case 0xDA:
            CHECK(read_scan(d, payload));
            if (dc_complete(d)) {
                return CJPEG_OK;
            }
            // The scan's data is passed over by next_marker (stuffed bytes and restarts are not markers to it).
            continue;
        default:
            if ((code >= 0xC0 && code <= 0xCF) && code != 0xC4 && code != 0xC8 && code != 0xCC) {
                return fail(d, CJPEG_UNSUPPORTED, "not a progressive Huffman-coded JPEG");
            }
            // APPn, COM, DNL, arithmetic conditioning and the rest: not needed.
            break;
        }
        d->position = end;
    }
}

// MARK: Pixels

static inline uint8_t clamp_sample(int value) {
    return (uint8_t)(value < 0 ? 0 : value > 255 ? 255 : value);
}

/// A component's 1/8 samples, one per block: libjpeg's 1/8 inverse DCT of a block with only its DC,
/// (DC × quantiser + 4) >> 3, centred on 128 and clamped.
static uint8_t *component_samples(const component *c) {
    uint8_t *samples = malloc((size_t)c->width_blocks * (size_t)c->height_blocks);
    if (samples == NULL) {
        return NULL;
    }
    for (int y = 0; y < c->height_blocks; y++) {
        const int32_t *row = c->dc + (size_t)y * (size_t)c->stride;
        uint8_t *out = samples + (size_t)y * (size_t)c->width_blocks;
        for (int x = 0; x < c->width_blocks; x++) {
            const int64_t value = (((int64_t)row[x] * c->quant_dc + 4) >> 3) + 128;
            out[x] = (uint8_t)(value < 0 ? 0 : value > 255 ? 255 : value);
        }
    }
    return samples;
}

// jdcolor.c's fixed point: 16 fraction bits, rounded.
#define DC_SCALE_BITS 16
#define DC_ONE_HALF ((int32_t)1 << (DC_SCALE_BITS - 1))
#define DC_FIX(x) ((int32_t)((x) * (1L << DC_SCALE_BITS) + 0.5))

/// The 1/8 image from each component's samples (`planes`): each pixel takes the block of each component that covers
/// it (a chroma block repeated over the luma blocks it spans), YCbCr turned into RGB as libjpeg does. `columns`
/// holds `width` ints per component.
static void fill_pixels(const dc_decoder *d, int rgb_stored, const uint8_t *const *planes, int *columns,
                        unsigned char *pixels, int width, int height) {
    const int count = d->component_count;
    const int bands = count == 1 ? 1 : 3;
    // Which block of each component covers each column (the ratios divide: read_frame checked).
    for (int i = 0; i < count; i++) {
        const int ratio = d->max_h / d->components[i].h;
        for (int x = 0; x < width; x++) {
            columns[(size_t)i * (size_t)width + (size_t)x] = x / ratio;
        }
    }
    for (int y = 0; y < height; y++) {
        const uint8_t *rows[DC_MAX_COMPONENTS];
        for (int i = 0; i < count; i++) {
            const component *c = &d->components[i];
            rows[i] = planes[i] + (size_t)(y / (d->max_v / c->v)) * (size_t)c->width_blocks;
        }
        unsigned char *out = pixels + (size_t)y * (size_t)width * (size_t)bands;
        if (bands == 1) {
            for (int x = 0; x < width; x++) {
                out[x] = rows[0][columns[x]];
            }
            continue;
        }
        const int *column_1 = columns + width, *column_2 = columns + 2 * (size_t)width;
        for (int x = 0; x < width; x++) {
            const int first = rows[0][columns[x]], second = rows[1][column_1[x]], third = rows[2][column_2[x]];
            if (rgb_stored) {
                out[3 * x] = (unsigned char)first;
                out[3 * x + 1] = (unsigned char)second;
                out[3 * x + 2] = (unsigned char)third;
                continue;
            }
            const int cb = second - 128, cr = third - 128;
            const int red = (DC_FIX(1.40200) * cr + DC_ONE_HALF) >> DC_SCALE_BITS;
            const int blue = (DC_FIX(1.77200) * cb + DC_ONE_HALF) >> DC_SCALE_BITS;
            const int green = (-DC_FIX(0.34414) * cb - DC_FIX(0.71414) * cr + DC_ONE_HALF) >> DC_SCALE_BITS;
            out[3 * x] = clamp_sample(first + red);
            out[3 * x + 1] = clamp_sample(first + green);
            out[3 * x + 2] = clamp_sample(first + blue);
        }
    }
}

/// The 1/8 image into `result` (`fill_pixels`).
static cjpeg_status write_pixels(dc_decoder *d, int rgb_stored, cjpeg_region_result *result) {
    const int width = (d->width + 7) / 8, height = (d->height + 7) / 8;
    const int bands = d->component_count == 1 ? 1 : 3;
    const int count = d->component_count;
    uint8_t *planes[DC_MAX_COMPONENTS] = {NULL};
    int *columns = malloc(sizeof(int) * (size_t)width * (size_t)count);
    unsigned char *pixels = malloc((size_t)width * (size_t)height * (size_t)bands);
    int missing = columns == NULL || pixels == NULL;
    for (int i = 0; i < count && !missing; i++) {
        planes[i] = component_samples(&d->components[i]);
        missing = planes[i] == NULL;
    }
    if (!missing) {
        fill_pixels(d, rgb_stored, (const uint8_t *const *)planes, columns, pixels, width, height);
    }
    for (int i = 0; i < count; i++) {
        free(planes[i]);
    }
    free(columns);
    if (missing) {
        free(pixels);
        return fail(d, CJPEG_NO_MEMORY, "cannot allocate the DC preview");
    }
    result->pixels = pixels;
    result->width = width;
    result->height = height;
    result->bands = bands;
    result->scaled_width = width;
    result->scaled_height = height;
    result->decoded_x = 0;
    result->decoded_width = width;
    return CJPEG_OK;
}

cjpeg_status cjpeg_decode_dc_preview(const unsigned char *data, size_t length, const int *cancel,
                                     cjpeg_region_result *result) {
    memset(result, 0, sizeof(*result));
    cjpeg_header header;
    const cjpeg_status read = cjpeg_read_header(data, length, &header);
    if (read != CJPEG_OK) {
        snprintf(result->message, sizeof(result->message), "%s", header.message);
        return read;
    }
    if (!header.progressive || header.arithmetic || header.precision != 8) {
        snprintf(result->message, sizeof(result->message), "not a progressive Huffman-coded 8-bit JPEG");
        return CJPEG_UNSUPPORTED;
    }
    // The colour space libjpeg decodes the file as: its output is RGB or grey for these alone.
    const int grey = header.colour == CJPEG_COLOUR_GREY && header.components == 1;
    const int colour = (header.colour == CJPEG_COLOUR_YCBCR || header.colour == CJPEG_COLOUR_RGB) &&
                       header.components == 3;
    if (!grey && !colour) {
        snprintf(result->message, sizeof(result->message), "output colour space is neither RGB nor grey");
        return CJPEG_UNSUPPORTED;
    }
    dc_decoder *d = calloc(1, sizeof(dc_decoder));
    if (d == NULL) {
        snprintf(result->message, sizeof(result->message), "cannot allocate a decoder");
        return CJPEG_NO_MEMORY;
    }
    d->data = data;
    d->length = length;
    d->cancel = cancel;
    d->component_count = header.components;
    cjpeg_status status = read_dc_scans(d);
    if (status == CJPEG_OK) {
        status = write_pixels(d, header.colour == CJPEG_COLOUR_RGB, result);
    }
    if (status != CJPEG_OK) {
        snprintf(result->message, sizeof(result->message), "%s", d->message);
    }
    for (int i = 0; i < DC_MAX_COMPONENTS; i++) {
        free(d->components[i].dc);
    }
    free(d);
    return status;
}
