#define _GNU_SOURCE  // dladdr
#include "CJPEGRegion.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

// MARK: Errors, warnings and cancellation
//
// libjpeg reports a fatal error by calling error_exit, which must not return. Ours records the
// message and longjmps back to the setjmp in the function of this file that started the libjpeg
// call, so only libjpeg's own frames and this file's are ever unwound.

/// As libvips' jpegload: past this many warnings a file is refused.
#define CJPEG_MAX_WARNINGS 100

/// Rows skipped per jpeg_skip_scanlines call (rounded to whole iMCU rows) and read between two
/// looks at the cancellation flag.
#define CJPEG_SKIP_CHUNK 256
#define CJPEG_READ_CHUNK 16

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    const int *cancel;
    int cancelled;
    char message[CJPEG_MESSAGE_LENGTH];
} error_manager;

static void store_message(j_common_ptr cinfo) {
    error_manager *errors = (error_manager *)cinfo->err;
    char buffer[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, buffer);
    snprintf(errors->message, sizeof(errors->message), "%s", buffer);
}

static void on_error_exit(j_common_ptr cinfo) {
    store_message(cinfo);
    longjmp(((error_manager *)cinfo->err)->jump, 1);
}

/// libjpeg's default prints to stderr; messages are only ever stored.
static void on_output_message(j_common_ptr cinfo) {
    store_message(cinfo);
}

/// Warnings (msg_level -1) are counted; the first one's text is kept; the 100th is fatal (the
/// policy of libvips' jpegload, which the libvips decoder path applies to the same files).
/// Trace messages (msg_level >= 0) are dropped.
static void on_emit_message(j_common_ptr cinfo, int msg_level) {
    if (msg_level >= 0) {
        return;
    }
    long warnings = ++cinfo->err->num_warnings;
    if (warnings == 1) {
        store_message(cinfo);
    } else if (warnings >= CJPEG_MAX_WARNINGS) {
        (*cinfo->err->error_exit)(cinfo);
    }
}

int cjpeg_flag_get(const int *flag) {
    return flag != NULL ? __atomic_load_n(flag, __ATOMIC_ACQUIRE) : 0;
}

void cjpeg_flag_set(int *flag, int value) {
    __atomic_store_n(flag, value, __ATOMIC_RELEASE);
}

/// Leaves the decode (from inside libjpeg too: the progress monitor) if the flag is set.
static void check_cancelled(j_common_ptr cinfo) {
    error_manager *errors = (error_manager *)cinfo->err;
    if (cjpeg_flag_get(errors->cancel)) {
        errors->cancelled = 1;
        snprintf(errors->message, sizeof(errors->message), "jpeg region decode cancelled");
        longjmp(errors->jump, 1);
    }
}

static void init_errors(error_manager *errors, const int *cancel) {
    memset(errors, 0, sizeof(*errors));
    jpeg_std_error(&errors->pub);
    errors->pub.error_exit = on_error_exit;
    errors->pub.output_message = on_output_message;
    errors->pub.emit_message = on_emit_message;
    errors->cancel = cancel;
}

// MARK: Source: the whole file in memory
//
// jpeg_mem_src would answer the end of the data with a warning and a made-up EOI marker (decoding
// grey rows); libvips' jpegload with fail_on=error stops with "Premature end of input file", and so
// does this source.

static void source_init(j_decompress_ptr cinfo) {
    (void)cinfo;
}

static boolean source_fill(j_decompress_ptr cinfo) {
    ERREXIT(cinfo, JERR_INPUT_EOF);
    return FALSE;
}

static void source_skip(j_decompress_ptr cinfo, long count) {
    if (count <= 0) {
        return;
    }
    if ((size_t)count > cinfo->src->bytes_in_buffer) {
        ERREXIT(cinfo, JERR_INPUT_EOF);
    }
    cinfo->src->next_input_byte += count;
    cinfo->src->bytes_in_buffer -= (size_t)count;
}

static void source_term(j_decompress_ptr cinfo) {
    (void)cinfo;
}

static void use_memory_source(j_decompress_ptr cinfo, struct jpeg_source_mgr *source, const unsigned char *data,
                              size_t length) {
    source->init_source = source_init;
    source->fill_input_buffer = source_fill;
    source->skip_input_data = source_skip;
    source->resync_to_restart = jpeg_resync_to_restart;
    source->term_source = source_term;
    source->next_input_byte = data;
    source->bytes_in_buffer = length;
    cinfo->src = source;
}

static cjpeg_status failure_status(const error_manager *errors) {
    if (errors->cancelled) {
        return CJPEG_CANCELLED;
    }
    return errors->pub.msg_code == JERR_OUT_OF_MEMORY ? CJPEG_NO_MEMORY : CJPEG_ERROR;
}

// MARK: One decompressor
//
// All the state a longjmp must find intact lives in one heap block: the function holding the
// setjmp keeps only the pointer to it, which never changes (locals changed after setjmp would be
// indeterminate after the longjmp).

typedef struct {
    struct jpeg_decompress_struct cinfo;
    struct jpeg_source_mgr source;
    struct jpeg_progress_mgr progress;
    error_manager errors;
    /// Owned until handed to the caller; freed on failure.
    unsigned char *pixels;
    unsigned char *rows;
    JOCTET *icc;
    unsigned int icc_length;
} decoder;

/// Progress monitor: libjpeg calls it once per jpeg_read_scanlines call and per iMCU row while it
/// buffers a multi-scan file, so a cancellation is seen inside those too.
static void on_progress(j_common_ptr cinfo) {
    check_cancelled(cinfo);
}

static decoder *decoder_new(const unsigned char *data, size_t length, const int *cancel) {
    decoder *d = calloc(1, sizeof(decoder));
    if (d == NULL) {
        return NULL;
    }
    init_errors(&d->errors, cancel);
    d->cinfo.err = &d->errors.pub;
    d->progress.progress_monitor = on_progress;
    // The source is attached after jpeg_create_decompress (which clears the struct).
    d->source.next_input_byte = data;
    d->source.bytes_in_buffer = length;
    return d;
}

/// Called only once jpeg_create_decompress returned (it may itself fail and longjmp).
static void decoder_start(decoder *d) {
    jpeg_create_decompress(&d->cinfo);
    use_memory_source(&d->cinfo, &d->source, d->source.next_input_byte, d->source.bytes_in_buffer);
    d->cinfo.progress = &d->progress;
}

static void decoder_free(decoder *d) {
    // Safe on a struct jpeg_create_decompress never filled (mem is NULL then).
    jpeg_destroy_decompress(&d->cinfo);
    free(d->pixels);
    free(d->rows);
    free(d->icc);
    free(d);
}

static void copy_message(char *out, const char *message) {
    snprintf(out, CJPEG_MESSAGE_LENGTH, "%s", message);
}

// MARK: Header

static cjpeg_colour colour_of(J_COLOR_SPACE space) {
    switch (space) {
    case JCS_GRAYSCALE: return CJPEG_COLOUR_GREY;
    case JCS_RGB: return CJPEG_COLOUR_RGB;
    case JCS_YCbCr: return CJPEG_COLOUR_YCBCR;
    case JCS_CMYK: return CJPEG_COLOUR_CMYK;
    case JCS_YCCK: return CJPEG_COLOUR_YCCK;
    default: return CJPEG_COLOUR_OTHER;
    }
}

static void read_header_steps(decoder *d, cjpeg_header *header) {
    j_decompress_ptr cinfo = &d->cinfo;
    decoder_start(d);
    jpeg_read_header(cinfo, TRUE);
    header->width = (int)cinfo->image_width;
    header->height = (int)cinfo->image_height;
    header->components = cinfo->num_components;
    header->colour = colour_of(cinfo->jpeg_color_space);
    header->multiscan = jpeg_has_multiple_scans(cinfo) ? 1 : 0;
    header->progressive = cinfo->progressive_mode ? 1 : 0;
    header->arithmetic = cinfo->arith_code ? 1 : 0;
    header->precision = cinfo->data_precision;
    header->adobe_transform = cinfo->saw_Adobe_marker ? cinfo->Adobe_transform : -1;
    header->max_h_sampling = cinfo->max_h_samp_factor;
    header->max_v_sampling = cinfo->max_v_samp_factor;
}

cjpeg_status cjpeg_read_header(const unsigned char *data, size_t length, cjpeg_header *header) {
    memset(header, 0, sizeof(*header));
    decoder *const d = decoder_new(data, length, NULL);
    if (d == NULL) {
        copy_message(header->message, "cannot allocate a decompressor");
        return CJPEG_NO_MEMORY;
    }
    if (setjmp(d->errors.jump)) {
        cjpeg_status status = failure_status(&d->errors);
        copy_message(header->message, d->errors.message);
        decoder_free(d);
        return status;
    }
    read_header_steps(d, header);
    decoder_free(d);
    return CJPEG_OK;
}

// MARK: Region decode

/// The rows one iMCU row holds at the chosen scale.
static int imcu_rows(j_decompress_ptr cinfo) {
#if JPEG_LIB_VERSION >= 70
    int size = cinfo->min_DCT_v_scaled_size;
#else
    int size = cinfo->min_DCT_scaled_size;
#endif
    int rows = cinfo->max_v_samp_factor * size;
    return rows > 0 ? rows : 1;
}

/// Bands of the output libjpeg will write: 3 for RGB, 1 for grey, 0 for anything else (not this decoder's job).
static int output_bands(j_decompress_ptr cinfo) {
    if (cinfo->out_color_space == JCS_RGB && cinfo->out_color_components == 3) {
        return 3;
    }
    return cinfo->out_color_space == JCS_GRAYSCALE && cinfo->out_color_components == 1 ? 1 : 0;
}

/// Everything between the header and the last row; libjpeg errors longjmp out of it. Returns
/// CJPEG_UNSUPPORTED (with `result->message`) or CJPEG_OK with the pixels in `d->pixels`.
static cjpeg_status decode_steps(decoder *d, const cjpeg_region_request *request, cjpeg_region_result *result) {
    j_decompress_ptr cinfo = &d->cinfo;
    decoder_start(d);
    check_cancelled((j_common_ptr)cinfo);
    jpeg_save_markers(cinfo, JPEG_APP0 + 2, 0xFFFF);
    jpeg_read_header(cinfo, TRUE);

    int denom = request->scale_denom;
    if (denom != 1 && denom != 2 && denom != 4 && denom != 8) {
        copy_message(result->message, "scale must be 1/1, 1/2, 1/4 or 1/8");
        return CJPEG_UNSUPPORTED;
    }
    // The output colour space stays libjpeg's default for the file, as in libvips' jpegload:
    // YCbCr and RGB give RGB, grey gives grey. Anything else is not this decoder's job.
    cinfo->scale_num = 1;
    cinfo->scale_denom = (unsigned int)denom;
    jpeg_calc_output_dimensions(cinfo);
    const int bands = output_bands(cinfo);
    if (bands == 0) {
        copy_message(result->message, "output colour space is neither RGB nor grey");
        return CJPEG_UNSUPPORTED;
    }
    int scaled_width = (int)cinfo->output_width;
    int scaled_height = (int)cinfo->output_height;
    int x = request->x, y = request->y, width = request->width, height = request->height;
    if (width <= 0 || height <= 0 || x < 0 || y < 0 || x > scaled_width - width || y > scaled_height - height) {
        copy_message(result->message, "region outside the scaled image");
        return CJPEG_UNSUPPORTED;
    }
    result->scaled_width = scaled_width;
    result->scaled_height = scaled_height;

    // A missing or malformed profile (jpeg_read_icc_profile then warns) leaves the image without
    // one, and the colour conversion treats it as untagged, as it does a profile lcms refuses.
    if (!jpeg_read_icc_profile(cinfo, &d->icc, &d->icc_length)) {
        d->icc = NULL;
        d->icc_length = 0;
    }

    jpeg_start_decompress(cinfo);

    // Columns: one pixel of margin on each side where the image continues, so that the region's
    // edge pixels are upsampled from their real neighbours (fancy upsampling treats the ends of
    // the decoded columns as the image's edges). libjpeg then moves the start left to an iMCU
    // boundary; the end stays where it is asked to be.
    JDIMENSION column = (JDIMENSION)(x > 0 ? x - 1 : 0);
    JDIMENSION right = (JDIMENSION)(x + width < scaled_width ? x + width + 1 : scaled_width);
    JDIMENSION columns = right - column;
    jpeg_crop_scanline(cinfo, &column, &columns);
    if ((int)column > x || (int)(column + columns) < x + width) {
        ERREXIT(cinfo, JERR_BAD_CROP_SPEC);
    }
    result->decoded_x = (int)column;
    result->decoded_width = (int)columns;
    size_t window_row = (size_t)columns * (size_t)bands;
    size_t region_row = (size_t)width * (size_t)bands;
    size_t offset = (size_t)(x - (int)column) * (size_t)bands;

    // Rows above the region: entropy-decoded (a Huffman stream cannot be skipped) but without the
    // inverse DCT, upsampling or colour conversion; in whole iMCU rows between two looks at the
    // cancellation flag.
    int per_imcu = imcu_rows(cinfo);
    int chunk = CJPEG_SKIP_CHUNK - CJPEG_SKIP_CHUNK % per_imcu;
    if (chunk <= 0) {
        chunk = per_imcu;
    }
    while ((int)cinfo->output_scanline < y) {
        int remaining = y - (int)cinfo->output_scanline;
        JDIMENSION skip = (JDIMENSION)(remaining > chunk ? chunk : remaining);
        if (jpeg_skip_scanlines(cinfo, skip) != skip) {
            ERREXIT1(cinfo, JERR_BAD_STATE, cinfo->global_state);
        }
        check_cancelled((j_common_ptr)cinfo);
    }

    int group = cinfo->rec_outbuf_height > 0 ? cinfo->rec_outbuf_height : 1;
    if (group > 16) {
        group = 16;
    }
    d->pixels = malloc(region_row * (size_t)height);
    d->rows = malloc(window_row * (size_t)group);
    if (d->pixels == NULL || d->rows == NULL) {
        ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
    }
    JSAMPROW pointers[16];
    for (int index = 0; index < group; index++) {
        pointers[index] = d->rows + (size_t)index * window_row;
    }
    int done = 0;
    int since_check = 0;
    while (done < height) {
        int wanted = height - done < group ? height - done : group;
        JDIMENSION got = jpeg_read_scanlines(cinfo, pointers, (JDIMENSION)wanted);
        if (got == 0) {
            // A suspending source could return 0; this one never suspends.
            ERREXIT(cinfo, JERR_INPUT_EOF);
        }
        for (JDIMENSION row = 0; row < got; row++) {
            memcpy(d->pixels + (size_t)(done + (int)row) * region_row, pointers[row] + offset, region_row);
        }
        done += (int)got;
        since_check += (int)got;
        if (since_check >= CJPEG_READ_CHUNK) {
            since_check = 0;
            check_cancelled((j_common_ptr)cinfo);
        }
    }

    // Nothing below the region is read, as libvips' sequential read never asks for it.
    jpeg_abort_decompress(cinfo);
    result->width = width;
    result->height = height;
    result->bands = bands;
    return CJPEG_OK;
}

/// The steps of one decode between the header and the pixels; libjpeg errors longjmp out of them. They leave the
/// pixels (and the ICC profile, if read) in the decoder, or return a status other than CJPEG_OK with `message` set.
typedef cjpeg_status (*decode_steps_fn)(decoder *d, const void *request, cjpeg_region_result *result);

/// Runs `steps` under this file's setjmp: on CJPEG_OK the caller owns `result->pixels` and `result->icc`; on any
/// other status both are NULL and `result->message` says why.
static cjpeg_status run_decode(const unsigned char *data, size_t length, const int *cancel, decode_steps_fn steps,
                               const void *request, cjpeg_region_result *result) {
    memset(result, 0, sizeof(*result));
    decoder *const d = decoder_new(data, length, cancel);
    if (d == NULL) {
        copy_message(result->message, "cannot allocate a decompressor");
        return CJPEG_NO_MEMORY;
    }
    if (setjmp(d->errors.jump)) {
        cjpeg_status status = failure_status(&d->errors);
        int warnings = (int)d->errors.pub.num_warnings;
        char message[CJPEG_MESSAGE_LENGTH];
        copy_message(message, d->errors.message);
        decoder_free(d);
        memset(result, 0, sizeof(*result));
        result->warnings = warnings;
        copy_message(result->message, message);
        return status;
    }
    cjpeg_status status = steps(d, request, result);
    if (status != CJPEG_OK) {
        decoder_free(d);
        return status;
    }
    // Handed over: the caller frees them.
    result->pixels = d->pixels;
    result->icc = d->icc;
    result->icc_length = d->icc != NULL ? d->icc_length : 0;
    d->pixels = NULL;
    d->icc = NULL;
    result->warnings = (int)d->errors.pub.num_warnings;
    if (result->warnings > 0) {
        copy_message(result->message, d->errors.message);
    }
    decoder_free(d);
    return CJPEG_OK;
}

static cjpeg_status region_steps(decoder *d, const void *request, cjpeg_region_result *result) {
    return decode_steps(d, (const cjpeg_region_request *)request, result);
}

cjpeg_status cjpeg_decode_region(const unsigned char *data, size_t length, const cjpeg_region_request *request,
                                 cjpeg_region_result *result) {
    return run_decode(data, length, request->cancel, region_steps, request, result);
}

void cjpeg_free(void *pointer) {
    free(pointer);
}

// MARK: Version

int cjpeg_library_version(char *buffer, size_t size) {
    // libjpeg-turbo's API has no version call (its JVERSION message is the emulated libjpeg's, "6b"), but
    // the library carries "libjpeg-turbo version X.Y.Z (build ...)" in its read-only data. Read it from the
    // shared object that is actually loaded: the one jpeg_std_error was resolved from.
    static const char marker[] = "libjpeg-turbo version ";
    const size_t marker_length = sizeof(marker) - 1;
    Dl_info info;
    if (size == 0 || dladdr((void *)jpeg_std_error, &info) == 0 || info.dli_fname == NULL) {
        return 0;
    }
    // Chunks that overlap by the marker's length plus the longest version, so no match is split.
    enum { CHUNK = 65536, OVERLAP = 64 };
    char *chunk = malloc(CHUNK + OVERLAP);
    FILE *file = chunk != NULL ? fopen(info.dli_fname, "rb") : NULL;
    if (file == NULL) {
        free(chunk);
        return 0;
    }
    int found = 0;
    size_t kept = 0;
    size_t count;
    while (!found && (count = fread(chunk + kept, 1, CHUNK, file)) > 0) {
        size_t length = kept + count;
        // A match starting in the last OVERLAP bytes is scanned again from the next chunk, whole.
        int more = count == CHUNK;
        size_t limit = more ? length - OVERLAP : length;
        for (size_t i = 0; i < limit && i + marker_length < length; i++) {
            if (memcmp(chunk + i, marker, marker_length) != 0) continue;
            size_t at = i + marker_length, n = 0;
            while (at + n < length && n + 1 < size) {
                char c = chunk[at + n];
                if (c != '.' && (c < '0' || c > '9')) break;
                buffer[n++] = c;
            }
            buffer[n] = '\0';
            found = n > 0;
            break;
        }
        kept = length < OVERLAP ? length : OVERLAP;
        memmove(chunk, chunk + length - kept, kept);
    }
    fclose(file);
    free(chunk);
    return found;
}
