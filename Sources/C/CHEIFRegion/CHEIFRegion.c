#define _GNU_SOURCE // cpu_set_t (CHEIFCoresPinning.h)
#include "CHEIFRegion.h"
#include "CHEIFConversion.h"
#include "CHEIFCoresPinning.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libheif/heif.h>
#include <libheif/heif_items.h>
#include <libheif/heif_properties.h>

struct cheif_file {
    /// The caller's bytes and limits: an extra tile thread opens the file again on them (libheif's API is not
    /// safe for two threads on one image item: it writes each call's error message into the item).
    const unsigned char *data;
    size_t length;
    cheif_limits limits;
    struct heif_context *context;
    struct heif_image_handle *handle;
    /// The largest thumbnail's handle, NULL when none.
    struct heif_image_handle *thumbnail;
    int width;
    int height;
    int columns;
    int rows;
    int tile_width;
    int tile_height;
    int bits;
    int has_alpha;
};

// MARK: Errors

static cheif_status fail(char *message, cheif_status status, const char *format, const char *detail) {
    snprintf(message, CHEIF_MESSAGE_LENGTH, format, detail != NULL ? detail : "");
    return status;
}

/// libheif's error as a status, its message kept.
static cheif_status heif_failure(struct heif_error error, char *message, const char *call) {
    snprintf(message, CHEIF_MESSAGE_LENGTH, "%s: %s", call, error.message != NULL ? error.message : "");
    if (error.code == heif_error_Memory_allocation_error) {
        return error.subcode == heif_suberror_Security_limit_exceeded ? CHEIF_LIMIT : CHEIF_NO_MEMORY;
    }
    if (error.subcode == heif_suberror_Security_limit_exceeded) {
        return CHEIF_LIMIT;
    }
    if (error.code == heif_error_Canceled) {
        return CHEIF_CANCELLED;
    }
    return CHEIF_ERROR;
}

static int cancelled(const int *flag) {
    return flag != NULL && __atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0;
}

/// libheif's cancellation hook (decoding options v6), polled inside its own loops.
static int cancel_decoding(void *user_data) {
    return cancelled((const int *)user_data);
}

// MARK: Version

int cheif_load_plugins(void) {
    struct heif_error error = heif_init(NULL);
    return error.code == heif_error_Ok ? 0 : (int)error.code;
}

const char *cheif_library_version(void) {
    return heif_get_version();
}

uint32_t cheif_library_version_number(void) {
    return heif_get_version_number();
}

// MARK: Open

/// `limit` where libheif has none (0) or a larger one.
static uint64_t tighter(uint64_t current, uint64_t limit) {
    return current == 0 || current > limit ? limit : current;
}

static void read_transforms(cheif_file *file, cheif_info *info) {
    heif_item_id id = heif_image_handle_get_item_id(file->handle);
    heif_property_id properties[CHEIF_MAX_TRANSFORMS];
    int count = heif_item_get_transformation_properties(file->context, id, properties, CHEIF_MAX_TRANSFORMS);
    if (count > CHEIF_MAX_TRANSFORMS) {
        count = CHEIF_MAX_TRANSFORMS;
    }
    info->transform_count = 0;
    for (int i = 0; i < count; i++) {
        cheif_transform *transform = &info->transforms[info->transform_count];
        switch (heif_item_get_property_type(file->context, id, properties[i])) {
        case heif_item_property_type_transform_rotation: {
            int degrees = heif_item_get_property_transform_rotation_ccw(file->context, id, properties[i]);
            if (degrees <= 0) {
                continue;
            }
            transform->kind = CHEIF_TRANSFORM_ROTATE;
            transform->value = (degrees / 90) % 4;
            break;
        }
        case heif_item_property_type_transform_mirror:
            transform->kind = CHEIF_TRANSFORM_MIRROR;
            transform->value =
                heif_item_get_property_transform_mirror(file->context, id, properties[i]) ==
                        heif_transform_mirror_direction_horizontal
                    ? 1
                    : 0;
            break;
        case heif_item_property_type_transform_crop:
            transform->kind = CHEIF_TRANSFORM_CROP;
            transform->value = 0;
            break;
        default:
            continue;
        }
        info->transform_count++;
    }
}

static void read_colour(cheif_file *file, cheif_info *info) {
    info->icc_length = heif_image_handle_get_raw_color_profile_size(file->handle);
    if (info->icc_length > 0) {
        return;
    }
    struct heif_color_profile_nclx *nclx = NULL;
    struct heif_error error = heif_image_handle_get_nclx_color_profile(file->handle, &nclx);
    if (error.code != heif_error_Ok || nclx == NULL) {
        return;
    }
    info->has_nclx = 1;
    info->nclx_primaries = (int)nclx->color_primaries;
    info->nclx_transfer = (int)nclx->transfer_characteristics;
    float values[8] = {nclx->color_primary_red_x,   nclx->color_primary_red_y,   nclx->color_primary_green_x,
                       nclx->color_primary_green_y, nclx->color_primary_blue_x,  nclx->color_primary_blue_y,
                       nclx->color_primary_white_x, nclx->color_primary_white_y};
    memcpy(info->nclx_chromaticities, values, sizeof(values));
    heif_nclx_color_profile_free(nclx);
}

static void read_thumbnail(cheif_file *file, cheif_info *info) {
    heif_item_id ids[4];
    int count = heif_image_handle_get_list_of_thumbnail_IDs(file->handle, ids, 4);
    for (int i = 0; i < count; i++) {
        struct heif_image_handle *thumbnail = NULL;
        if (heif_image_handle_get_thumbnail(file->handle, ids[i], &thumbnail).code != heif_error_Ok) {
            continue;
        }
        int width = heif_image_handle_get_width(thumbnail);
        int height = heif_image_handle_get_height(thumbnail);
        if ((int64_t)width * height > (int64_t)info->thumbnail_width * info->thumbnail_height) {
            if (file->thumbnail != NULL) {
                heif_image_handle_release(file->thumbnail);
            }
            file->thumbnail = thumbnail;
            info->thumbnail_width = width;
            info->thumbnail_height = height;
        } else {
            heif_image_handle_release(thumbnail);
        }
    }
}

/// The grid must cover the image exactly: every tile starts inside it and the last ones reach its edge.
static cheif_status check_layout(const struct heif_image_tiling *tiling, const cheif_info *info,
                                 const cheif_limits *limits, char *message) {
    if (tiling->number_of_extra_dimensions != 0) {
        return fail(message, CHEIF_UNSUPPORTED, "%sa tiling with extra dimensions", NULL);
    }
    if (tiling->num_columns == 0 || tiling->num_rows == 0 || tiling->tile_width == 0 || tiling->tile_height == 0) {
        return fail(message, CHEIF_ERROR, "%san empty tiling", NULL);
    }
    if ((int64_t)tiling->image_width != info->width || (int64_t)tiling->image_height != info->height) {
        return fail(message, CHEIF_ERROR, "%sthe grid's output size is not the ispe size", NULL);
    }
    if ((uint64_t)tiling->num_columns * tiling->num_rows > limits->max_tiles) {
        return fail(message, CHEIF_LIMIT, "%stoo many tiles", NULL);
    }
    if ((uint64_t)tiling->tile_width * tiling->tile_height > limits->max_pixels) {
        return fail(message, CHEIF_LIMIT, "%sa tile has too many pixels", NULL);
    }
    uint64_t covered_width = (uint64_t)tiling->num_columns * tiling->tile_width;
    uint64_t covered_height = (uint64_t)tiling->num_rows * tiling->tile_height;
    if (covered_width < (uint64_t)info->width || covered_height < (uint64_t)info->height ||
        covered_width - tiling->tile_width >= (uint64_t)info->width ||
        covered_height - tiling->tile_height >= (uint64_t)info->height) {
        return fail(message, CHEIF_ERROR, "%sthe tiles do not cover the ispe size exactly", NULL);
    }
    return CHEIF_OK;
}

/// Every tile item of a grid must be an image libheif can decode: its tile API (1.19.7,
/// heif_image_handle_decode_image_tile) dereferences NULL on a tile item that is not a proper image,
/// where its whole-image decode fails cleanly (docs/UPSTREAM-BUGS.md). libheif's own image lookup,
/// heif_context_get_image_handle, finds no image for such an item: the file fails here instead.
static cheif_status check_tiles(cheif_file *file, const cheif_info *info, char *message) {
    for (int row = 0; row < info->rows; row++) {
        for (int column = 0; column < info->columns; column++) {
            heif_item_id id = 0;
            struct heif_error error =
                heif_image_handle_get_grid_image_tile_id(file->handle, 0, (uint32_t)column, (uint32_t)row, &id);
            if (error.code != heif_error_Ok) {
                return heif_failure(error, message, "grid tile");
            }
            struct heif_image_handle *tile = NULL;
            error = heif_context_get_image_handle(file->context, id, &tile);
            if (error.code != heif_error_Ok || tile == NULL) {
                snprintf(message, CHEIF_MESSAGE_LENGTH, "grid tile (%d, %d): item %u is not an image", column, row,
                         (unsigned)id);
                return CHEIF_ERROR;
            }
            heif_image_handle_release(tile);
        }
    }
    return CHEIF_OK;
}

/// A libheif context over `data` (not copied) under its security limits tightened to `limits`, and its primary
/// image's handle. On failure `*context` is NULL only when it could not be allocated; the caller frees both.
static cheif_status open_primary(const unsigned char *data, size_t length, const cheif_limits *limits,
                                 struct heif_context **context, struct heif_image_handle **handle, char *message) {
    *handle = NULL;
    *context = heif_context_alloc();
    if (*context == NULL) {
        return fail(message, CHEIF_NO_MEMORY, "%sout of memory", NULL);
    }
    // The limits apply while the boxes are parsed, so they are set before the read.
    struct heif_security_limits security = *heif_context_get_security_limits(*context);
    security.max_image_size_pixels = tighter(security.max_image_size_pixels, limits->max_pixels);
    security.max_number_of_tiles = tighter(security.max_number_of_tiles, limits->max_tiles);
    struct heif_error error = heif_context_set_security_limits(*context, &security);
    if (error.code != heif_error_Ok) {
        return heif_failure(error, message, "set_security_limits");
    }
    // No threads of libheif's own: a grid's tiles share cores through `cheif_cores`.
    heif_context_set_max_decoding_threads(*context, 0);
    error = heif_context_read_from_memory_without_copy(*context, data, length, NULL);
    if (error.code != heif_error_Ok) {
        return heif_failure(error, message, "read");
    }
    error = heif_context_get_primary_image_handle(*context, handle);
    if (error.code != heif_error_Ok) {
        return heif_failure(error, message, "primary image");
    }
    return CHEIF_OK;
}

cheif_status cheif_open(const unsigned char *data, size_t length, const cheif_limits *limits, cheif_file **out,
                        cheif_info *info) {
    memset(info, 0, sizeof(*info));
    *out = NULL;
    cheif_file *file = calloc(1, sizeof(cheif_file));
    if (file == NULL) {
        return fail(info->message, CHEIF_NO_MEMORY, "%sout of memory", NULL);
    }
    file->data = data;
    file->length = length;
    file->limits = *limits;
    cheif_status status = open_primary(data, length, limits, &file->context, &file->handle, info->message);
    if (status != CHEIF_OK) {
        if (file->context == NULL) {
            free(file);
            return status;
        }
        goto failed;
    }
    struct heif_error error;
    info->width = heif_image_handle_get_ispe_width(file->handle);
    info->height = heif_image_handle_get_ispe_height(file->handle);
    info->display_width = heif_image_handle_get_width(file->handle);
    info->display_height = heif_image_handle_get_height(file->handle);
    if (info->width <= 0 || info->height <= 0) {
        status = fail(info->message, CHEIF_ERROR, "%sthe primary image has no ispe size", NULL);
        goto failed;
    }
    if ((uint64_t)info->width * (uint64_t)info->height > limits->max_pixels) {
        status = fail(info->message, CHEIF_LIMIT, "%sthe primary image has too many pixels", NULL);
        goto failed;
    }
    struct heif_image_tiling tiling;
    memset(&tiling, 0, sizeof(tiling));
    error = heif_image_handle_get_image_tiling(file->handle, 0, &tiling);
    if (error.code != heif_error_Ok) {
        status = heif_failure(error, info->message, "tiling");
        goto failed;
    }
    if (tiling.num_columns == 1 && tiling.num_rows == 1) {
        // One coded image: libheif reports its tiling in displayed orientation; it is the ispe image.
        tiling.image_width = tiling.tile_width = (uint32_t)info->width;
        tiling.image_height = tiling.tile_height = (uint32_t)info->height;
    }
    status = check_layout(&tiling, info, limits, info->message);
    if (status != CHEIF_OK) {
        goto failed;
    }
    info->columns = (int)tiling.num_columns;
    info->rows = (int)tiling.num_rows;
    info->tile_width = (int)tiling.tile_width;
    info->tile_height = (int)tiling.tile_height;
    if (info->columns * info->rows > 1) {
        status = check_tiles(file, info, info->message);
        if (status != CHEIF_OK) {
            goto failed;
        }
    }
    info->bits = heif_image_handle_get_luma_bits_per_pixel(file->handle);
    info->has_alpha = heif_image_handle_has_alpha_channel(file->handle);
    if (info->bits < 1 || info->bits > 16) {
        status = fail(info->message, CHEIF_ERROR, "%sunknown bit depth", NULL);
        goto failed;
    }
    read_transforms(file, info);
    read_colour(file, info);
    read_thumbnail(file, info);

    file->width = info->width;
    file->height = info->height;
    file->columns = info->columns;
    file->rows = info->rows;
    file->tile_width = info->tile_width;
    file->tile_height = info->tile_height;
    file->bits = info->bits;
    file->has_alpha = info->has_alpha;
    *out = file;
    return CHEIF_OK;

failed:
    cheif_close(file);
    return status;
}

void cheif_close(cheif_file *file) {
    if (file == NULL) {
        return;
    }
    if (file->thumbnail != NULL) {
        heif_image_handle_release(file->thumbnail);
    }
    if (file->handle != NULL) {
        heif_image_handle_release(file->handle);
    }
    heif_context_free(file->context);
    free(file);
}

cheif_status cheif_copy_icc(cheif_file *file, unsigned char *buffer, size_t length) {
    if (heif_image_handle_get_raw_color_profile_size(file->handle) != length) {
        return CHEIF_ERROR;
    }
    struct heif_error error = heif_image_handle_get_raw_color_profile(file->handle, buffer);
    return error.code == heif_error_Ok ? CHEIF_OK : CHEIF_ERROR;
}

// MARK: Decode

typedef struct {
    unsigned char *pixels;
    /// The output rectangle, in pixels of the shrunk image.
    int x;
    int y;
    int width;
    int height;
    int bands;
    /// Bytes per sample of the decoded planes and of the output (1, or 2 above 8 bits).
    int sample_bytes;
    /// Left shift that brings a sample to 16 bits (0 for 8-bit output).
    int shift;
    /// The box shrink and the rectangle it reads, in stored pixels: [left, right) × [top, bottom).
    int shrink;
    int left;
    int top;
    int right;
    int bottom;
    /// shrink > 1: the horizontal sums of `window` output rows (a ring indexed by output row), the rows
    /// of one tile row and the one a tile seam may split; `flushed` output rows are written. `carry`:
    /// one row of per-column vertical sums, for the box a tile row's seam cuts.
    uint32_t *sums;
    uint32_t *carry;
    int window;
    int flushed;
} destination;

/// Tile row `y` from column `x` of libheif's interleaved plane.
static const uint8_t *interleaved_row(const tile_pixels *tile, int y, int x, int pixel_bytes) {
    return tile->plane + (size_t)y * tile->stride + (size_t)x * pixel_bytes;
}

/// Reads a decoded tile (`expected` size) into `tile`: libheif's interleaved plane of `pixel_bytes` per
/// pixel, or (`matrix` not NULL) its 4:2:0 planes of `matrix->bits` bits and the matrix that turns them into RGB.
/// The rows are read `width` samples at a time, so the layout libheif answers is checked against that first.
static cheif_status read_tile(const struct heif_image *image, int expected_width, int expected_height,
                              const ycbcr_matrix *matrix, int pixel_bytes, tile_pixels *tile, char *message) {
    memset(tile, 0, sizeof(*tile));
    enum heif_channel channel = matrix != NULL ? heif_channel_Y : heif_channel_interleaved;
    tile->width = heif_image_get_width(image, channel);
    tile->height = heif_image_get_height(image, channel);
    if (tile->width != expected_width || tile->height != expected_height) {
        return fail(message, CHEIF_ERROR, "%sa tile decoded to another size than the grid declares", NULL);
    }
    if (matrix == NULL) {
        tile->plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &tile->stride);
        if (tile->plane == NULL || heif_image_get_bits_per_pixel(image, heif_channel_interleaved) != pixel_bytes * 8 ||
            tile->stride < tile->width * pixel_bytes) {
            return fail(message, CHEIF_ERROR, "%sno interleaved plane of the requested layout", NULL);
        }
        return CHEIF_OK;
    }
    tile->matrix = *matrix;
    const int sample_bytes = matrix->bits > 8 ? 2 : 1;
    tile->luma = heif_image_get_plane_readonly(image, heif_channel_Y, &tile->luma_stride);
    tile->cb = heif_image_get_plane_readonly(image, heif_channel_Cb, &tile->cb_stride);
    tile->cr = heif_image_get_plane_readonly(image, heif_channel_Cr, &tile->cr_stride);
    int chroma_width = (tile->width + 1) / 2;
    int chroma_height = (tile->height + 1) / 2;
    // The depth itself the caller checked (`decode_unit`); here, that the samples are stored as the spans read them.
    const enum heif_channel planes[] = {heif_channel_Y, heif_channel_Cb, heif_channel_Cr};
    for (int i = 0; i < 3; i++) {
        if (heif_image_get_bits_per_pixel(image, planes[i]) != sample_bytes * 8) {
            return fail(message, CHEIF_ERROR, "%sa tile's planes are not stored in samples of their depth", NULL);
        }
    }
    if (tile->luma == NULL || tile->cb == NULL || tile->cr == NULL ||
        tile->luma_stride < tile->width * sample_bytes ||
        heif_image_get_width(image, heif_channel_Cb) != chroma_width ||
        heif_image_get_height(image, heif_channel_Cb) != chroma_height ||
        heif_image_get_width(image, heif_channel_Cr) != chroma_width ||
        heif_image_get_height(image, heif_channel_Cr) != chroma_height ||
        tile->cb_stride < chroma_width * sample_bytes || tile->cr_stride < chroma_width * sample_bytes) {
        return fail(message, CHEIF_ERROR, "%sa tile's chroma planes do not match its size", NULL);
    }
    return CHEIF_OK;
}

/// `values[i] = (values[i] + count / 2) / count`, the rounded means vips_shrink takes, for `count` samples each: a
/// shift for the powers of two shrink-on-load asks for (1 to 8), a division otherwise; both loops vectorize.
static void rounded_means(uint32_t *values, size_t length, uint32_t count) {
    const uint32_t half = count / 2;
    if ((count & (count - 1)) == 0) {
        const int shift = __builtin_ctz(count);
        for (size_t i = 0; i < length; i++) {
            values[i] = (values[i] + half) >> shift;
        }
    } else {
        for (size_t i = 0; i < length; i++) {
            values[i] = (values[i] + half) / count;
        }
    }
}

/// Copies (shrink 1) or adds into the box sums (shrink > 1) the part of `tile`, placed at `left, top`
/// of the image being decoded, that overlaps the destination's rectangle.
static void copy_overlap(tile_pixels *tile, int left, int top, destination *out) {
    const int width = tile->width;
    const int height = tile->height;
    int x0 = out->left > left ? out->left : left;
    int y0 = out->top > top ? out->top : top;
    int x1 = out->right < left + width ? out->right : left + width;
    int y1 = out->bottom < top + height ? out->bottom : top + height;
    if (x0 >= x1 || y0 >= y1) {
        return;
    }
    const int pixel_bytes = out->bands * out->sample_bytes;
    const int bands = out->bands;
    if (out->shrink == 1) {
        for (int y = y0; y < y1; y++) {
            uint8_t *target =
                out->pixels + ((size_t)(y - out->top) * out->width + (size_t)(x0 - out->left)) * pixel_bytes;
            if (tile->luma != NULL) {
                cheif_convert_row(tile, y - top, x0 - left, x1 - x0, out->shift, target, NULL);
                continue;
            }
            const uint8_t *source = interleaved_row(tile, y - top, x0 - left, pixel_bytes);
            size_t row_bytes = (size_t)(x1 - x0) * pixel_bytes;
            if (out->shift == 0) {
                memcpy(target, source, row_bytes);
            } else {
                // Little-endian samples of `bits` bits, written native and shifted up as libvips does.
                for (size_t i = 0; i < row_bytes; i += 2) {
                    uint16_t value = (uint16_t)(source[i] | (source[i + 1] << 8));
                    value = (uint16_t)(value << out->shift);
                    memcpy(target + i, &value, 2);
                }
            }
        }
        return;
    }
    // The box shrink as libvips' vips_shrink computes it: each column's vertical mean of f samples
    // (shifted up first, as heifload gives them), rounded, then the horizontal mean of f of those,
    // rounded when the row is flushed. A box cut by a tile row's seam keeps its columns' partial
    // vertical sums in `carry` until the next tile row completes them.
    const int f = out->shrink;
    const int first = (y0 - out->top) / f;
    const int last = (y1 - 1 - out->top) / f;
    for (int row = first; row <= last; row++) {
        const int box_top = out->top + row * f;
        const int ys = box_top > y0 ? box_top : y0;
        const int ye = box_top + f < y1 ? box_top + f : y1;
        const int continued = ys > box_top;
        const int complete = ye == box_top + f;
        const size_t samples = (size_t)(x1 - x0) * bands;
        uint32_t *vertical = out->carry + (size_t)(x0 - out->left) * bands;
        if (!continued) {
            memset(vertical, 0, samples * sizeof(uint32_t));
        }
        for (int y = ys; y < ye; y++) {
            if (tile->luma != NULL) {
                cheif_convert_row(tile, y - top, x0 - left, x1 - x0, out->shift, NULL, vertical);
                continue;
            }
            const uint8_t *source = interleaved_row(tile, y - top, x0 - left, pixel_bytes);
            if (out->sample_bytes == 1) {
                for (size_t i = 0; i < samples; i++) {
                    vertical[i] += source[i];
                }
            } else {
                for (size_t i = 0; i < samples; i++) {
                    vertical[i] += (uint32_t)(source[2 * i] | (source[2 * i + 1] << 8)) << out->shift;
                }
            }
        }
        if (!complete) {
            continue;
        }
        uint32_t *sum = out->sums + (size_t)(row % out->window) * out->width * bands +
                        (size_t)((x0 - out->left) / f) * bands;
        // Each column's vertical mean, rounded, in place (the box is complete), then added to its output pixel.
        rounded_means(vertical, samples, (uint32_t)f);
        int phase = (x0 - out->left) % f;
        for (int x = x0; x < x1; x++, vertical += bands) {
            for (int band = 0; band < bands; band++) {
                sum[band] += vertical[band];
            }
            if (++phase == f) {
                phase = 0;
                sum += bands;
            }
        }
    }
}

/// shrink > 1: writes the output rows whose boxes end at or above stored row `done` (every source
/// row above it has been added) as rounded means of their rounded column means, and clears their
/// sums for the rows that follow.
static void flush_rows(destination *out, int done) {
    if (out->shrink == 1) {
        return;
    }
    const uint32_t count = (uint32_t)out->shrink;
    const size_t samples = (size_t)out->width * out->bands;
    int complete = (done - out->top) / out->shrink;
    if (complete > out->height) {
        complete = out->height;
    }
    for (; out->flushed < complete; out->flushed++) {
        uint32_t *sums = out->sums + (size_t)(out->flushed % out->window) * samples;
        rounded_means(sums, samples, count);
        if (out->sample_bytes == 1) {
            uint8_t *target = out->pixels + (size_t)out->flushed * samples;
            for (size_t i = 0; i < samples; i++) {
                target[i] = (uint8_t)sums[i];
            }
        } else {
            uint16_t *target = (uint16_t *)(void *)(out->pixels + (size_t)out->flushed * samples * 2);
            for (size_t i = 0; i < samples; i++) {
                target[i] = (uint16_t)sums[i];
            }
        }
        memset(sums, 0, samples * sizeof(uint32_t));
    }
}

/// Bytes per pixel of the interleaved layouts cheif_decode_region asks for: RGB(A), 8 or 16 bits a sample.
static int interleaved_bytes(enum heif_chroma chroma) {
    switch (chroma) {
    case heif_chroma_interleaved_RGB: return 3;
    case heif_chroma_interleaved_RGBA: return 4;
    case heif_chroma_interleaved_RRGGBB_LE: return 6;
    default: return 8;
    }
}

/// Decodes one tile (`column`, `row`), or the whole image (`column` < 0), and reads it into `tile`:
/// as its 4:2:0 planes when `planar_bits` (the coded image is 4:2:0 YCbCr of that depth) and libheif gives them
/// with a matrix the conversion here reproduces, else as libheif's interleaved `chroma`. The caller releases
/// `*image` (set even on failure when libheif returned one).
static cheif_status decode_unit(struct heif_image_handle *handle, const struct heif_decoding_options *options,
                                int column, int row, enum heif_chroma chroma, int planar_bits, int width, int height,
                                struct heif_image **image, tile_pixels *tile, char *message) {
    struct heif_error error;
    if (planar_bits) {
        error = column < 0 ? heif_decode_image(handle, image, heif_colorspace_YCbCr, heif_chroma_420, options)
                           : heif_image_handle_decode_image_tile(handle, image, heif_colorspace_YCbCr,
                                                                 heif_chroma_420, options, (uint32_t)column,
                                                                 (uint32_t)row);
        if (error.code != heif_error_Ok) {
            return heif_failure(error, message, column < 0 ? "decode" : "decode tile");
        }
        ycbcr_matrix matrix;
        if (heif_image_get_colorspace(*image) == heif_colorspace_YCbCr &&
            heif_image_get_chroma_format(*image) == heif_chroma_420 &&
            heif_image_get_bits_per_pixel_range(*image, heif_channel_Y) == planar_bits &&
            heif_image_get_bits_per_pixel_range(*image, heif_channel_Cb) == planar_bits &&
            heif_image_get_bits_per_pixel_range(*image, heif_channel_Cr) == planar_bits &&
            !heif_image_has_channel(*image, heif_channel_Alpha) &&
            cheif_decoded_matrix(*image, planar_bits, &matrix)) {
            return read_tile(*image, width, height, &matrix, 0, tile, message);
        }
        // Planes this conversion does not reproduce: libheif converts them.
        heif_image_release(*image);
        *image = NULL;
    }
    error = column < 0 ? heif_decode_image(handle, image, heif_colorspace_RGB, chroma, options)
                       : heif_image_handle_decode_image_tile(handle, image, heif_colorspace_RGB, chroma, options,
                                                             (uint32_t)column, (uint32_t)row);
    if (error.code != heif_error_Ok) {
        return heif_failure(error, message, column < 0 ? "decode" : "decode tile");
    }
    if (heif_image_get_chroma_format(*image) != chroma) {
        return fail(message, CHEIF_ERROR, "%sa tile decoded to another layout than requested", NULL);
    }
    return read_tile(*image, width, height, NULL, interleaved_bytes(chroma), tile, message);
}

/// The depth of the coded image's samples when it is 4:2:0 YCbCr without alpha, luma and chroma of one depth
/// from 8 to 16 bits (its tiles can be read as planes); 0 otherwise.
static int coded_as_420(struct heif_image_handle *handle) {
    enum heif_colorspace colorspace = heif_colorspace_undefined;
    enum heif_chroma chroma = heif_chroma_undefined;
    if (heif_image_handle_get_preferred_decoding_colorspace(handle, &colorspace, &chroma).code != heif_error_Ok) {
        return 0;
    }
    const int bits = heif_image_handle_get_luma_bits_per_pixel(handle);
    const int planar = colorspace == heif_colorspace_YCbCr && chroma == heif_chroma_420 && bits >= 8 && bits <= 16 &&
                       heif_image_handle_get_chroma_bits_per_pixel(handle) == bits &&
                       !heif_image_handle_has_alpha_channel(handle);
    return planar ? bits : 0;
}

/// A grid's tiles under the region, decoded by the caller's thread and up to `extra` more, each extra thread
/// holding a core of `cores` for each tile it decodes. Tiles are claimed in row-major order and copied into
/// `out` in that order (the box sums carry across tile seams), by whichever thread finds the next one decoded;
/// at most `window` tiles are claimed and not yet copied.
typedef struct {
    /// The caller's handle; each extra thread opens `file` again for a handle of its own.
    struct heif_image_handle *handle;
    const cheif_file *file;
    const struct heif_decoding_options *options;
    enum heif_chroma chroma;
    /// The depth of the 4:2:0 planes read and converted here, 0 when libheif converts (`decode_unit`).
    int planar;
    int tile_width;
    int tile_height;
    int first_column;
    int first_row;
    int columns;
    int total;
    const int *cancel;
    cheif_cores *cores;
    destination *out;

    pthread_mutex_t mutex;
    pthread_cond_t changed;
    int window;
    /// Tiles claimed, and copied (in order); a thread is copying.
    int claimed;
    int copied;
    int copying;
    struct decoded_tile {
        struct heif_image *image;
        tile_pixels pixels;
        int ready;
    } *slots;
    cheif_status status;
    char message[CHEIF_MESSAGE_LENGTH];
    int converted;
    /// Threads that decoded at least one tile.
    int threads;
} tile_run;

int cheif_tiles_held(int extra_threads) { return 2 * (1 + extra_threads) - 1; }

/// Stack of an extra tile thread: libheif's and the decoder plugin's calls (libde265 decodes on a thread of its own).
static const size_t tile_thread_stack = 2 << 20;

/// With the mutex held: copies every decoded tile that is next in order, unless another thread is at it
/// (the mutex is released while a tile is copied).
static void copy_ready(tile_run *run) {
    while (!run->copying && run->status == CHEIF_OK && run->copied < run->claimed &&
           run->slots[run->copied % run->window].ready) {
        struct decoded_tile *slot = &run->slots[run->copied % run->window];
        const int index = run->copied;
        run->copying = 1;
        pthread_mutex_unlock(&run->mutex);
        const int column = run->first_column + index % run->columns;
        const int row = run->first_row + index / run->columns;
        copy_overlap(&slot->pixels, column * run->tile_width, row * run->tile_height, run->out);
        if (index % run->columns == run->columns - 1) {
            flush_rows(run->out, (row + 1) * run->tile_height);
        }
        run->converted += slot->pixels.luma != NULL;
        heif_image_release(slot->image);
        pthread_mutex_lock(&run->mutex);
        slot->image = NULL;
        slot->ready = 0;
        run->copied++;
        run->copying = 0;
        pthread_cond_broadcast(&run->changed);
    }
}

/// One thread's share, on `handle`: claims the next tile, decodes it (an extra thread only with a core taken for it;
/// `core` is one it already holds, or -1), puts it in its slot and copies what is ready, until the tiles run out, a
/// tile fails, or (extra) no core is free.
static void decode_share(tile_run *run, struct heif_image_handle *handle, int extra, int core) {
    int decoded = 0;
    for (;;) {
        pthread_mutex_lock(&run->mutex);
        while (run->status == CHEIF_OK && run->claimed < run->total && run->claimed >= run->copied + run->window) {
            pthread_cond_wait(&run->changed, &run->mutex);
        }
        // A core is taken only for a tile there is to decode, and held only while it is decoded.
        if (run->status != CHEIF_OK || run->claimed >= run->total ||
            (extra && core < 0 && (core = cheif_cores_take_extra(run->cores)) < 0)) {
            pthread_mutex_unlock(&run->mutex);
            if (core >= 0) {
                cheif_cores_give(run->cores, core);
            }
            return;
        }
        const int index = run->claimed++;
        run->threads += !decoded;
        decoded = 1;
        pthread_mutex_unlock(&run->mutex);

        struct heif_image *image = NULL;
        tile_pixels pixels;
        char message[CHEIF_MESSAGE_LENGTH] = "";
        cheif_status status;
        if (cancelled(run->cancel)) {
            status = fail(message, CHEIF_CANCELLED, "%sheif region decode cancelled", NULL);
        } else {
            status = decode_unit(handle, run->options, run->first_column + index % run->columns,
                                 run->first_row + index / run->columns, run->chroma, run->planar, run->tile_width,
                                 run->tile_height, &image, &pixels, message);
        }
        if (extra) {
            cheif_cores_give(run->cores, core);
            core = -1;
        }
        pthread_mutex_lock(&run->mutex);
        if (status != CHEIF_OK) {
            heif_image_release(image);
            if (run->status == CHEIF_OK) {
                run->status = status;
                memcpy(run->message, message, sizeof(message));
            }
            pthread_cond_broadcast(&run->changed);
        } else {
            struct decoded_tile *slot = &run->slots[index % run->window];
            slot->image = image;
            slot->pixels = pixels;
            slot->ready = 1;
            copy_ready(run);
        }
        const int stop = run->status != CHEIF_OK;
        pthread_mutex_unlock(&run->mutex);
        if (stop) {
            return;
        }
    }
}

/// An extra thread: a core first (at full load there is none, and the thread ends having cost only its start),
/// then the file opened again in a libheif context of its own — libheif writes each call's error message into the
/// image item, unguarded, so two threads failing on one item free one string twice (ASan found it, fuzzing;
/// docs/UPSTREAM-BUGS.md).
static void *extra_share(void *argument) {
    tile_run *run = argument;
    int core = cheif_cores_take_extra(run->cores);
    if (core < 0) {
        return NULL;
    }
    struct heif_context *context = NULL;
    struct heif_image_handle *handle = NULL;
    char message[CHEIF_MESSAGE_LENGTH];
    if (open_primary(run->file->data, run->file->length, &run->file->limits, &context, &handle, message) ==
        CHEIF_OK) {
        decode_share(run, handle, 1, core);
    } else {
        // The caller's thread opened the same bytes: this can only be memory. Fewer threads, same tiles.
        cheif_cores_give(run->cores, core);
    }
    if (handle != NULL) {
        heif_image_handle_release(handle);
    }
    heif_context_free(context);
    return NULL;
}

/// Decodes `run`'s tiles into its destination; on failure `message` says why. Every decoded tile is freed
/// before this returns.
static cheif_status decode_tiles(tile_run *run, int extra, char *message) {
    if (extra > run->total - 1) {
        extra = run->total - 1;
    }
    if (extra < 0) {
        extra = 0;
    }
    run->window = cheif_tiles_held(extra);
    run->slots = calloc((size_t)run->window, sizeof(*run->slots));
    pthread_t *threads = extra > 0 ? calloc((size_t)extra, sizeof(pthread_t)) : NULL;
    if (run->slots == NULL || (extra > 0 && threads == NULL)) {
        free(run->slots);
        free(threads);
        return fail(message, CHEIF_NO_MEMORY, "%sout of memory", NULL);
    }
    pthread_mutex_init(&run->mutex, NULL);
    pthread_cond_init(&run->changed, NULL);
    int started = 0;
    if (extra > 0) {
        pthread_attr_t attributes;
        pthread_attr_init(&attributes);
        pthread_attr_setstacksize(&attributes, tile_thread_stack);
        // A thread that cannot be made (address space, thread limits) only means fewer threads.
        while (started < extra && pthread_create(&threads[started], &attributes, extra_share, run) == 0) {
            started++;
        }
        pthread_attr_destroy(&attributes);
    }
    decode_share(run, run->handle, 0, -1);
    for (int i = 0; i < started; i++) {
        pthread_join(threads[i], NULL);
    }
    free(threads);
    // Every thread has returned: what a failure left decoded and uncopied is freed here.
    for (int i = 0; i < run->window; i++) {
        heif_image_release(run->slots[i].image);
    }
    free(run->slots);
    pthread_cond_destroy(&run->changed);
    pthread_mutex_destroy(&run->mutex);
    if (run->status == CHEIF_OK && run->copied != run->total) {
        run->status = CHEIF_ERROR;
        snprintf(run->message, sizeof(run->message), "heif region decode: %d of %d tiles copied", run->copied,
                 run->total);
    }
    if (run->status != CHEIF_OK) {
        memcpy(message, run->message, CHEIF_MESSAGE_LENGTH);
    }
    return run->status;
}

cheif_status cheif_decode_region(cheif_file *file, const cheif_region_request *request,
                                 cheif_region_result *result) {
    memset(result, 0, sizeof(*result));
    const int thumbnail = request->thumbnail != 0;
    struct heif_image_handle *handle = thumbnail ? file->thumbnail : file->handle;
    if (handle == NULL) {
        return fail(result->message, CHEIF_UNSUPPORTED, "%sno thumbnail", NULL);
    }
    int image_width = thumbnail ? heif_image_handle_get_width(handle) : file->width;
    int image_height = thumbnail ? heif_image_handle_get_height(handle) : file->height;
    const int64_t f = request->shrink;
    if (f < 1 || f > 64 || request->origin_x < 0 || request->origin_x >= f || request->origin_y < 0 ||
        request->origin_y >= f || request->width <= 0 || request->height <= 0 || request->x < 0 || request->y < 0 ||
        request->origin_x + (request->x + (int64_t)request->width) * f > image_width ||
        request->origin_y + (request->y + (int64_t)request->height) * f > image_height) {
        return fail(result->message, CHEIF_UNSUPPORTED, "%sthe region is outside the image", NULL);
    }
    int bits = thumbnail ? heif_image_handle_get_luma_bits_per_pixel(handle) : file->bits;
    int alpha = thumbnail ? heif_image_handle_has_alpha_channel(handle) : file->has_alpha;
    int sixteen = bits > 8;
    int bands = alpha ? 4 : 3;
    enum heif_chroma chroma = sixteen ? (alpha ? heif_chroma_interleaved_RRGGBBAA_LE : heif_chroma_interleaved_RRGGBB_LE)
                                      : (alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB);
    destination out = {
        .x = request->x,
        .y = request->y,
        .width = request->width,
        .height = request->height,
        .bands = bands,
        .sample_bytes = sixteen ? 2 : 1,
        .shift = sixteen ? 16 - bits : 0,
        .shrink = (int)f,
        .left = request->origin_x + request->x * (int)f,
        .top = request->origin_y + request->y * (int)f,
    };
    out.right = out.left + out.width * out.shrink;
    out.bottom = out.top + out.height * out.shrink;
    size_t length = (size_t)out.width * (size_t)out.height * (size_t)(bands * out.sample_bytes);
    out.pixels = malloc(length);
    if (out.pixels == NULL) {
        return fail(result->message, CHEIF_NO_MEMORY, "%sout of memory for the region", NULL);
    }
    if (out.shrink > 1) {
        // One tile row's output rows, plus the one a tile seam can split (a non-grid image is one tile).
        int unit_height = thumbnail || (file->columns == 1 && file->rows == 1) ? image_height : file->tile_height;
        out.window = unit_height / out.shrink + 2;
        if (out.window > out.height) {
            out.window = out.height;
        }
        out.sums = calloc((size_t)out.window * out.width * bands, sizeof(uint32_t));
        out.carry = calloc((size_t)(out.right - out.left) * bands, sizeof(uint32_t));
        if (out.sums == NULL || out.carry == NULL) {
            free(out.sums);
            free(out.carry);
            free(out.pixels);
            return fail(result->message, CHEIF_NO_MEMORY, "%sout of memory for the region", NULL);
        }
    }

    // The primary image's 4:2:0 tiles are converted here, only where the region reads them (libheif would
    // convert each whole tile first, a deeper one into a 16-bit RGB buffer twice its planes' size); the
    // thumbnail and images with alpha by libheif.
    const int planar = !thumbnail && !alpha && !request->libheif_conversion ? coded_as_420(handle) : 0;
    struct heif_decoding_options *options = heif_decoding_options_alloc();
    if (options == NULL) {
        free(out.sums);
        free(out.carry);
        free(out.pixels);
        return fail(result->message, CHEIF_NO_MEMORY, "%sout of memory", NULL);
    }
    // The thumbnail is small and decoded as displayed; the primary image stays as stored (the caller
    // turns only the square upright).
    options->ignore_transformations = thumbnail ? 0 : 1;
    options->convert_hdr_to_8bit = 0;
    options->progress_user_data = (void *)request->cancel;
    options->cancel_decoding = cancel_decoding;

    cheif_status status = CHEIF_OK;
    int tiles = 0;
    int converted = 0;
    int threads = 1;
    if (thumbnail || (file->columns == 1 && file->rows == 1)) {
        // One coded image: decoded whole (libheif has no smaller unit for it), then cut.
        if (cancelled(request->cancel)) {
            status = fail(result->message, CHEIF_CANCELLED, "%sheif region decode cancelled", NULL);
        } else {
            struct heif_image *image = NULL;
            tile_pixels tile;
            // dav1d sizes its threads from the CPUs it may run on: the decode cores decide them (CHEIFCoresPinning.h).
            // libde265 decodes on one thread of its own whatever the CPUs.
            const int av1 = heif_item_get_item_type(file->context, heif_image_handle_get_item_id(handle)) ==
                            heif_fourcc('a', 'v', '0', '1');
            cheif_pinning pinning;
            const int pinned = av1 ? cheif_cores_pin(request->cores, &pinning) : 0;
            status = decode_unit(handle, options, -1, 0, chroma, planar, image_width, image_height, &image, &tile,
                                 result->message);
            if (av1) {
                cheif_cores_unpin(request->cores, &pinning);
            }
            threads = pinned > 0 ? pinned : 1;
            if (status == CHEIF_OK) {
                copy_overlap(&tile, 0, 0, &out);
                flush_rows(&out, image_height);
                tiles = 1;
                converted = tile.luma != NULL;
            }
            heif_image_release(image);
        }
    } else {
        tile_run run = {
            .handle = handle,
            .file = file,
            .options = options,
            .chroma = chroma,
            .planar = planar,
            .tile_width = file->tile_width,
            .tile_height = file->tile_height,
            .first_column = out.left / file->tile_width,
            .first_row = out.top / file->tile_height,
            .cancel = request->cancel,
            .cores = request->cores,
            .out = &out,
            .status = CHEIF_OK,
        };
        run.columns = (out.right - 1) / file->tile_width - run.first_column + 1;
        run.total = run.columns * ((out.bottom - 1) / file->tile_height - run.first_row + 1);
        status = decode_tiles(&run, request->cores != NULL ? request->extra_threads : 0, result->message);
        tiles = run.copied;
        converted = run.converted;
        threads = run.threads;
    }
    heif_decoding_options_free(options);
    free(out.sums);
    free(out.carry);
    if (status != CHEIF_OK) {
        free(out.pixels);
        return status;
    }
    result->pixels = out.pixels;
    result->length = length;
    result->width = out.width;
    result->height = out.height;
    result->bands = bands;
    result->sixteen_bit = sixteen;
    result->tiles = tiles;
    result->converted_tiles = converted;
    result->threads = threads;
    return CHEIF_OK;
}
