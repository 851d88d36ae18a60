// The floor of the render benchmark (bench/README.md): the least work any crop-to-avatar pipeline
// must do for a JPEG or HEIF (HEIC, AVIF) crop, measured in the same run as the renderers it bounds.
//
//   floor IMAGE SIZE WARMUP RUNS < REGIONS
//
// REGIONS holds one line per pose: `NAME SCALE X Y W H`.
//   JPEG: SCALE is the libjpeg DCT scale denominator (1, 2, 4 or 8) and X Y W H the crop square in STORED
//   orientation on the scaled grid (driver.py computes them as the renderer plans them). Per pose and run:
//   1. decodes exactly that region with libjpeg-turbo: DCT scaling, jpeg_crop_scanline for the
//      columns, jpeg_skip_scanlines for the rows above, and stops after the region's last row;
//   HEIF: SCALE is 1 and X Y W H the plan's crop in ORIENTED pixels; the program maps it into stored
//   orientation through the primary item's irot/imir (as CropPipeline does for EXIF), then
//   1. decodes with libheif exactly the grid tiles the stored square touches
//      (heif_image_handle_decode_image_tile, transformations ignored) and copies their overlap into one
//      buffer; a non-grid image (most AVIFs) is one tile, decoded whole. 8-bit RGB out (10-bit converted).
//      FLOOR_HEIF_WHOLE=1 decodes the whole primary image instead (the peak a whole-image decode needs);
//      FLOOR_HEIF_DECODER=ID picks libheif's decoder plugin (libde265, ffmpeg, dav1d, aom: see
//      bench/heif_decoders.py), otherwise libheif takes the highest-priority one installed; one decoding
//      thread, as the renderer uses;
//   2. resizes it to SIZE x SIZE with libvips' lanczos3 (the renderer's kernel);
//   3. encodes it as PNG the way the renderer does (libdeflate level 1, the Average row filter; see
//      RenditionEncoder.pngLevel), without metadata: IHDR, IDAT, IEND.
// No colour management, no rotation, no flattening, no header probe, no checks: what is left is what
// the crop's pixels cost to decode, scale and encode. It prints one JSON line per pose (impl "floor", or
// "floor-whole" with FLOOR_HEIF_WHOLE=1; timed runs in ms, the decode alone, and each run's process CPU
// time) and one per image (peak RSS), like benchlib.py.
//
// Built by bench/bench.sh: cc -O2 floor.c $(pkg-config --cflags --libs vips libheif) -ljpeg -ldeflate
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>
#include <libdeflate.h>
#include <libheif/heif.h>
#include <libheif/heif_properties.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vips/vips.h>

struct floor_error {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
};

static void floor_error_exit(j_common_ptr cinfo) {
    struct floor_error *error = (struct floor_error *)cinfo->err;
    (*cinfo->err->output_message)(cinfo);
    longjmp(error->jump, 1);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

// CPU time of the whole process (every thread): on a busy machine it moves far less than wall time.
static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static long status_kib(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long value = -1;
    size_t n = strlen(field);
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            value = strtol(line + n + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return value;
}

// Decodes region (x, y, w, h) of the image scaled by 1/scale into a malloc'd buffer of w*h*bands.
static unsigned char *decode_region(const unsigned char *data, size_t length, int scale, int x, int y, int w,
                                    int h, int *bands) {
    struct jpeg_decompress_struct cinfo;
    struct floor_error jerr;
    unsigned char *volatile pixels = NULL;
    unsigned char *volatile row = NULL;
    cinfo.err = jpeg_std_error(&jerr.pub);
    jerr.pub.error_exit = floor_error_exit;
    if (setjmp(jerr.jump)) {
        jpeg_destroy_decompress(&cinfo);
        free(pixels);
        free(row);
        return NULL;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)length);
    jpeg_read_header(&cinfo, TRUE);
    cinfo.scale_num = 1;
    cinfo.scale_denom = (unsigned int)scale;
    cinfo.out_color_space = cinfo.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    if (x < 0 || y < 0 || w <= 0 || h <= 0 || (JDIMENSION)(x + w) > cinfo.output_width ||
        (JDIMENSION)(y + h) > cinfo.output_height) {
        fprintf(stderr, "floor: region %d,%d %dx%d outside %ux%u\n", x, y, w, h, cinfo.output_width,
                cinfo.output_height);
        jpeg_destroy_decompress(&cinfo);
        return NULL;
    }
    JDIMENSION left = (JDIMENSION)x, width = (JDIMENSION)w;
    jpeg_crop_scanline(&cinfo, &left, &width);  // widens to iMCU boundaries
    if (y > 0) jpeg_skip_scanlines(&cinfo, (JDIMENSION)y);
    int components = cinfo.output_components;
    row = malloc((size_t)cinfo.output_width * components);
    pixels = malloc((size_t)w * h * components);
    size_t skip = (size_t)(x - (int)left) * components;
    for (int r = 0; r < h; r++) {
        JSAMPROW rows[1] = {row};
        jpeg_read_scanlines(&cinfo, rows, 1);
        memcpy(pixels + (size_t)r * w * components, row + skip, (size_t)w * components);
    }
    jpeg_abort_decompress(&cinfo);  // the rows below are never read
    jpeg_destroy_decompress(&cinfo);
    free(row);
    *bands = components;
    return pixels;
}

// True when the file is an ISO BMFF (HEIF/AVIF): `ftyp` at offset 4.
static int is_heif(const unsigned char *data, size_t length) {
    return length >= 12 && memcmp(data + 4, "ftyp", 4) == 0;
}

static int heif_failed(struct heif_error error, const char *what) {
    if (error.code == heif_error_Ok) return 0;
    fprintf(stderr, "floor: %s: %s\n", what, error.message);
    return 1;
}

// Maps the oriented square (x, y, w, h) back into stored pixels through the item's transformations
// (irot, imir; applied in file order to the stored image, so undone here in reverse order).
static int heif_stored_rect(struct heif_context *ctx, struct heif_image_handle *handle, int *x, int *y, int *w,
                            int *h) {
    heif_item_id id = heif_image_handle_get_item_id(handle);
    heif_property_id properties[8];
    int count = heif_item_get_transformation_properties(ctx, id, properties, 8);
    int widths[9], heights[9];  // the image's size before each transformation
    widths[0] = heif_image_handle_get_ispe_width(handle);
    heights[0] = heif_image_handle_get_ispe_height(handle);
    for (int i = 0; i < count; i++) {
        int rotated = heif_item_get_property_type(ctx, id, properties[i]) == heif_item_property_type_transform_rotation
                      && heif_item_get_property_transform_rotation_ccw(ctx, id, properties[i]) % 180 != 0;
        widths[i + 1] = rotated ? heights[i] : widths[i];
        heights[i + 1] = rotated ? widths[i] : heights[i];
    }
    for (int i = count - 1; i >= 0; i--) {
        int W = widths[i], H = heights[i], rx = *x, ry = *y, rw = *w, rh = *h;
        switch (heif_item_get_property_type(ctx, id, properties[i])) {
            case heif_item_property_type_transform_rotation:
                switch (heif_item_get_property_transform_rotation_ccw(ctx, id, properties[i])) {
                    case 90: *x = W - ry - rh; *y = rx; *w = rh; *h = rw; break;
                    case 180: *x = W - rx - rw; *y = H - ry - rh; break;
                    case 270: *x = ry; *y = H - rx - rw; *w = rh; *h = rw; break;
                    default: break;
                }
                break;
            case heif_item_property_type_transform_mirror:
                if (heif_item_get_property_transform_mirror(ctx, id, properties[i]) ==
                    heif_transform_mirror_direction_horizontal)
                    *x = W - rx - rw;
                else
                    *y = H - ry - rh;
                break;
            default:
                fprintf(stderr, "floor: clap (clean aperture) is not mapped\n");
                return 1;
        }
    }
    return 0;
}

// Copies the overlap of a decoded stored-orientation image placed at (ox, oy) with the region into out.
static void copy_overlap(const struct heif_image *image, int ox, int oy, int x, int y, int w, int h,
                         unsigned char *out) {
    int stride = 0;
    const uint8_t *plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride);
    int iw = heif_image_get_primary_width(image), ih = heif_image_get_primary_height(image);
    int left = ox > x ? ox : x, right = ox + iw < x + w ? ox + iw : x + w;
    int top = oy > y ? oy : y, bottom = oy + ih < y + h ? oy + ih : y + h;
    for (int r = top; r < bottom; r++)
        memcpy(out + ((size_t)(r - y) * w + (left - x)) * 3, plane + (size_t)(r - oy) * stride + (size_t)(left - ox) * 3,
               (size_t)(right - left) * 3);
}

// Decodes the oriented region (x, y, w, h) in stored orientation: only the grid tiles it touches.
static unsigned char *decode_region_heif(const unsigned char *data, size_t length, int x, int y, int w, int h,
                                        int *bands) {
    struct heif_context *ctx = heif_context_alloc();
    struct heif_image_handle *handle = NULL;
    struct heif_decoding_options *options = heif_decoding_options_alloc();
    unsigned char *pixels = NULL;
    options->ignore_transformations = 1;
    options->convert_hdr_to_8bit = 1;
    options->decoder_id = getenv("FLOOR_HEIF_DECODER");
    // One thread per job, as the worker renders (several jobs at once, VIPS_CONCURRENCY=1 each): libheif
    // would otherwise decode a grid's tiles on as many threads as the machine has cores.
    heif_context_set_max_decoding_threads(ctx, 1);
    if (heif_failed(heif_context_read_from_memory_without_copy(ctx, data, length, NULL), "read") ||
        heif_failed(heif_context_get_primary_image_handle(ctx, &handle), "primary image") ||
        heif_stored_rect(ctx, handle, &x, &y, &w, &h))
        goto done;
    struct heif_image_tiling tiling = {0};
    if (heif_failed(heif_image_handle_get_image_tiling(handle, 0, &tiling), "tiling")) goto done;
    if (x < 0 || y < 0 || w <= 0 || h <= 0 || (uint32_t)(x + w) > tiling.image_width ||
        (uint32_t)(y + h) > tiling.image_height) {
        fprintf(stderr, "floor: region %d,%d %dx%d outside %ux%u\n", x, y, w, h, tiling.image_width,
                tiling.image_height);
        goto done;
    }
    pixels = malloc((size_t)w * h * 3);
    const char *whole = getenv("FLOOR_HEIF_WHOLE");
    if (whole && *whole == '1') {
        struct heif_image *image = NULL;
        if (heif_failed(heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGB, options),
                        "decode")) {
            free(pixels);
            pixels = NULL;
            goto done;
        }
        copy_overlap(image, 0, 0, x, y, w, h, pixels);
        heif_image_release(image);
        goto done;
    }
    for (uint32_t ty = (uint32_t)y / tiling.tile_height; ty <= (uint32_t)(y + h - 1) / tiling.tile_height; ty++) {
        for (uint32_t tx = (uint32_t)x / tiling.tile_width; tx <= (uint32_t)(x + w - 1) / tiling.tile_width; tx++) {
            struct heif_image *tile = NULL;
            if (heif_failed(heif_image_handle_decode_image_tile(handle, &tile, heif_colorspace_RGB,
                                                                heif_chroma_interleaved_RGB, options, tx, ty),
                            "decode tile")) {
                free(pixels);
                pixels = NULL;
                goto done;
            }
            copy_overlap(tile, (int)(tx * tiling.tile_width), (int)(ty * tiling.tile_height), x, y, w, h, pixels);
            heif_image_release(tile);
        }
    }
done:
    *bands = 3;
    if (handle) heif_image_handle_release(handle);
    heif_decoding_options_free(options);
    heif_context_free(ctx);
    return pixels;
}

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

// Appends a chunk (length, type, data, CRC) at out; returns the bytes written.
static size_t put_chunk(unsigned char *out, const char *type, const unsigned char *data, size_t length) {
    put32(out, (uint32_t)length);
    memcpy(out + 4, type, 4);
    if (length) memcpy(out + 8, data, length);
    put32(out + 8 + length, libdeflate_crc32(0, out + 4, 4 + length));
    return 12 + length;
}

// An 8-bit PNG of w x h pixels of `bands` (1-4) samples: every row Average-filtered, one zlib stream at
// libdeflate level 1. Returns its size, or -1.
static long png_encode(const unsigned char *pixels, int w, int h, int bands) {
    static const unsigned char colour_types[] = {0, 0, 4, 2, 6};
    size_t stride = (size_t)w * bands, raw_size = (stride + 1) * h;
    unsigned char *raw = malloc(raw_size);
    struct libdeflate_compressor *compressor = libdeflate_alloc_compressor(1);
    if (!raw || !compressor) {
        free(raw);
        if (compressor) libdeflate_free_compressor(compressor);
        return -1;
    }
    for (int y = 0; y < h; y++) {
        const unsigned char *row = pixels + (size_t)y * stride, *up = y ? row - stride : NULL;
        unsigned char *out = raw + (size_t)y * (stride + 1);
        out[0] = 3;  // Average
        for (size_t i = 0; i < stride; i++) {
            unsigned left = i >= (size_t)bands ? row[i - bands] : 0, above = up ? up[i] : 0;
            out[1 + i] = (unsigned char)(row[i] - ((left + above) >> 1));
        }
    }
    size_t bound = libdeflate_zlib_compress_bound(compressor, raw_size);
    unsigned char *png = malloc(8 + 25 + 12 + bound + 12);
    long result = -1;
    if (png) {
        static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
        unsigned char ihdr[13] = {0};
        put32(ihdr, (uint32_t)w);
        put32(ihdr + 4, (uint32_t)h);
        ihdr[8] = 8;
        ihdr[9] = colour_types[bands];
        size_t at = 8;
        memcpy(png, signature, 8);
        at += put_chunk(png + at, "IHDR", ihdr, sizeof ihdr);
        size_t deflated = libdeflate_zlib_compress(compressor, raw, raw_size, png + at + 8, bound);
        if (deflated) {
            // IDAT written in place: length and type before the data, the CRC after it.
            put32(png + at, (uint32_t)deflated);
            memcpy(png + at + 4, "IDAT", 4);
            put32(png + at + 8 + deflated, libdeflate_crc32(0, png + at + 4, 4 + deflated));
            at += 12 + deflated;
            at += put_chunk(png + at, "IEND", NULL, 0);
            result = (long)at;
            // FLOOR_DUMP=FILE keeps the last PNG, to check that the floor's output is a real avatar.
            const char *dump = getenv("FLOOR_DUMP");
            FILE *file = dump ? fopen(dump, "wb") : NULL;
            if (file) {
                fwrite(png, 1, at, file);
                fclose(file);
            }
        }
        free(png);
    }
    libdeflate_free_compressor(compressor);
    free(raw);
    return result;
}

// Resize (libvips lanczos3, into memory) + encode; returns the PNG size, or -1.
static long resize_encode(unsigned char *pixels, int w, int h, int bands, int size) {
    VipsImage *in = vips_image_new_from_memory(pixels, (size_t)w * h * bands, w, h, bands, VIPS_FORMAT_UCHAR);
    VipsImage *resized = NULL, *exact = NULL;
    long result = -1;
    if (!in) return -1;
    if (vips_resize(in, &resized, (double)size / w, "vscale", (double)size / h, "kernel", VIPS_KERNEL_LANCZOS3,
                    NULL) == 0 &&
        vips_extract_area(resized, &exact, 0, 0, VIPS_MIN(size, resized->Xsize), VIPS_MIN(size, resized->Ysize),
                          NULL) == 0) {
        size_t length = 0;
        unsigned char *square = vips_image_write_to_memory(exact, &length);
        if (square) {
            result = png_encode(square, exact->Xsize, exact->Ysize, exact->Bands);
            g_free(square);
        }
    }
    if (exact) g_object_unref(exact);
    if (resized) g_object_unref(resized);
    g_object_unref(in);
    return result;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int n) {
    qsort(values, (size_t)n, sizeof *values, compare_doubles);
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

static void print_list(const double *values, int n) {
    putchar('[');
    for (int i = 0; i < n; i++) printf(i ? ",%.3f" : "%.3f", values[i]);
    putchar(']');
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: floor IMAGE SIZE WARMUP RUNS < REGIONS\n");
        return 2;
    }
    if (VIPS_INIT(argv[0])) vips_error_exit(NULL);
    vips_cache_set_max(0);
    const char *image = argv[1];
    int size = atoi(argv[2]), warmup = atoi(argv[3]), runs = atoi(argv[4]);
    if (size <= 0 || warmup < 0 || runs <= 0 || runs > 1000) {
        fprintf(stderr, "floor: bad SIZE, WARMUP or RUNS\n");
        return 2;
    }
    long baseline = status_kib("VmRSS");

    FILE *f = fopen(image, "rb");
    if (!f) {
        perror(image);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long length = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc((size_t)length);
    if (fread(data, 1, (size_t)length, f) != (size_t)length) {
        fprintf(stderr, "floor: short read\n");
        return 1;
    }
    fclose(f);

    int heif = is_heif(data, (size_t)length);
    const char *whole = getenv("FLOOR_HEIF_WHOLE");
    const char *impl = heif && whole && *whole == '1' ? "floor-whole" : "floor";
    char name[128];
    int scale, x, y, w, h;
    double *total = calloc((size_t)runs, sizeof(double)), *decode = calloc((size_t)runs, sizeof(double)),
           *cpu = calloc((size_t)runs, sizeof(double));
    while (scanf("%127s %d %d %d %d %d", name, &scale, &x, &y, &w, &h) == 6) {
        long png = -1;
        for (int i = 0; i < warmup + runs; i++) {
            double t0 = now_ms(), c0 = cpu_ms();
            int bands = 0;
            unsigned char *pixels = heif ? decode_region_heif(data, (size_t)length, x, y, w, h, &bands)
                                         : decode_region(data, (size_t)length, scale, x, y, w, h, &bands);
            if (!pixels) return 1;
            double t1 = now_ms();
            png = resize_encode(pixels, w, h, bands, size);
            double t2 = now_ms(), c2 = cpu_ms();
            free(pixels);
            if (png < 0) {
                fprintf(stderr, "floor: %s\n", vips_error_buffer());
                return 1;
            }
            if (i >= warmup) {
                total[i - warmup] = t2 - t0;
                decode[i - warmup] = t1 - t0;
                cpu[i - warmup] = c2 - c0;
            }
        }
        printf("{\"type\":\"pose\",\"impl\":\"%s\",\"image\":\"%s\",\"pose\":\"%s\",\"scale\":%d,"
               "\"region\":[%d,%d,%d,%d],\"ms\":",
               impl, image, name, scale, x, y, w, h);
        print_list(total, runs);
        printf(",\"decode_ms\":");
        print_list(decode, runs);
        printf(",\"cpu_ms\":");
        print_list(cpu, runs);
        printf(",\"decode_ms_median\":%.3f,\"ms_median\":%.3f,\"output_bytes\":%ld}\n", median(decode, runs),
               median(total, runs), png);
        fflush(stdout);
    }
    long peak = status_kib("VmHWM");
    printf("{\"type\":\"image\",\"impl\":\"%s\",\"image\":\"%s\",\"baseline_mb\":%.1f,\"peak_mb\":%.1f,"
           "\"peak_above_baseline_mb\":%.1f}\n",
           impl, image, baseline / 1024.0, peak / 1024.0, (peak - baseline) / 1024.0);
    free(data);
    free(total);
    free(decode);
    free(cpu);
    vips_shutdown();
    return 0;
}
