// Non-variadic wrappers around the libvips operations avatar-cropper calls.
//
// libvips operations are variadic (optional arguments as NULL-terminated name/value pairs),
// which Swift cannot call. Each wrapper here takes the options the Imaging module uses as
// plain parameters. All return 0 on success and -1 on failure (details in the libvips error
// buffer, read with vips_error_buffer_copy()), like libvips itself.
#pragma once
#include <vips/vips.h>

// MARK: Library lifetime and process-wide settings

/// VIPS_INIT (a macro) plus the version check it performs.
int cvips_init(const char *argv0);
/// Registers the HEIF loader and saver (libvips' `vips-heif` module, from the module directory beside the loaded
/// libvips) unless they are registered already. A render helper runs with `VIPSHOME` pointing nowhere, so libvips
/// loads none of its modules at start (ImageMagick, Poppler, OpenSlide and JPEG XL bring 22 libraries it never uses);
/// it loads this one alone. 0 when the HEIF loader is registered afterwards.
int cvips_load_heif_module(void);
/// Drops libvips' GLib warnings (e.g. "not enough data" for a damaged file). Loaders run with
/// fail_on=error, so every warning that matters becomes an error in the error buffer instead.
void cvips_silence_warnings(void);

/// A failed GLib allocation (g_malloc's fatal "failed to allocate" error) ends the process with `_exit(status)`
/// instead of aborting: a render helper tells its worker it ran out of memory, not that it crashed.
void cvips_exit_on_failed_allocation(int status);

/// glibc only: caps malloc arenas (mallopt M_ARENA_MAX) unless MALLOC_ARENA_MAX is set in the
/// environment. Returns 1 if the cap was set, 0 otherwise (other libc, or the environment decides).
int cvips_limit_malloc_arenas(int arenas);
/// The major/minor/micro version of the libvips actually loaded.
int cvips_version(int which);
/// Blocks every loader (and other untrusted operation) except the ones avatar-cropper accepts:
/// JPEG, PNG, WebP, HEIF (HEIC/AVIF), GIF, TIFF.
void cvips_block_all_loaders_except_allowed(void);

// MARK: Handles and header access

void cvips_unref(VipsImage *image);
/// The nick of an interpretation ("srgb", "b-w", "cmyk", "rgb16", ...), never NULL.
const char *cvips_interpretation_nick(VipsInterpretation interpretation);
/// 1 if the field exists and holds an int, which is stored in *out.
int cvips_get_int(VipsImage *image, const char *name, int *out);
/// 1 if the field exists (any type).
int cvips_has_field(VipsImage *image, const char *name);
/// Sets the ICC profile blob (copied).
void cvips_set_icc_profile(VipsImage *image, const void *data, size_t length);
/// Copies the ICC profile blob into a g_malloc'd buffer (free with g_free). NULL if none.
void *cvips_copy_icc_profile(VipsImage *image, size_t *length);
/// A NULL-terminated list of the field names (free with g_strfreev).
char **cvips_field_names(VipsImage *image);
void cvips_free_strv(char **strv);
void cvips_free(void *pointer);

// MARK: Loaders (buffer must outlive the image)

int cvips_jpegload_buffer(const void *buf, size_t len, VipsImage **out, int shrink, int sequential,
                          VipsFailOn fail_on);
int cvips_pngload_buffer(const void *buf, size_t len, VipsImage **out, int sequential, VipsFailOn fail_on);
int cvips_webpload_buffer(const void *buf, size_t len, VipsImage **out, double scale, int sequential,
                          VipsFailOn fail_on);
int cvips_heifload_buffer(const void *buf, size_t len, VipsImage **out, int sequential, VipsFailOn fail_on);
int cvips_gifload_buffer(const void *buf, size_t len, VipsImage **out, int sequential, VipsFailOn fail_on);
int cvips_tiffload_buffer(const void *buf, size_t len, VipsImage **out, int sequential, VipsFailOn fail_on);
/// heifload of the file's thumbnail item when it has one (else its primary image), as displayed.
int cvips_heifload_thumbnail_buffer(const void *buf, size_t len, VipsImage **out, VipsFailOn fail_on);
/// An image over raw uchar pixels the caller malloc'd, without copying them: the image takes
/// ownership and free()s them when it closes (also when this call fails, returning NULL).
VipsImage *cvips_image_take_pixels(void *data, size_t length, int width, int height, int bands,
                                   VipsInterpretation interpretation);
/// The same over samples of `format` (VIPS_FORMAT_UCHAR or VIPS_FORMAT_USHORT, native order).
VipsImage *cvips_image_take_samples(void *data, size_t length, int width, int height, int bands,
                                    VipsBandFormat format, VipsInterpretation interpretation);

// MARK: Operations

int cvips_extract_area(VipsImage *in, VipsImage **out, int left, int top, int width, int height);
int cvips_extract_band(VipsImage *in, VipsImage **out, int band, int n);
int cvips_bandjoin2(VipsImage *a, VipsImage *b, VipsImage **out);
/// input_profile may be NULL (libvips default). depth 8 or 16.
int cvips_icc_transform(VipsImage *in, VipsImage **out, const char *output_profile, const char *input_profile,
                        int embedded, int depth);
int cvips_colourspace(VipsImage *in, VipsImage **out, VipsInterpretation space);
/// shift: scale integer formats by bit shifting (ushort -> uchar keeps the top 8 bits).
int cvips_cast(VipsImage *in, VipsImage **out, VipsBandFormat format, int shift);
int cvips_flatten(VipsImage *in, VipsImage **out, double red, double green, double blue, double max_alpha);
int cvips_resize(VipsImage *in, VipsImage **out, double hscale, double vscale, VipsKernel kernel);
/// An integer box shrink (each output pixel the mean of factor × factor input pixels).
int cvips_shrink(VipsImage *in, VipsImage **out, int factor);
int cvips_embed(VipsImage *in, VipsImage **out, int x, int y, int width, int height, VipsExtend extend);
int cvips_rot(VipsImage *in, VipsImage **out, VipsAngle angle);
int cvips_flip(VipsImage *in, VipsImage **out, VipsDirection direction);
int cvips_autorot(VipsImage *in, VipsImage **out);
int cvips_copy(VipsImage *in, VipsImage **out);
/// A copy that declares its pixels sRGB (the caller guarantees 3 uchar bands of sRGB).
int cvips_copy_as_srgb(VipsImage *in, VipsImage **out);
/// Sets the orientation field (EXIF orientation 1-8) on an image returned by cvips_copy.
void cvips_set_orientation(VipsImage *image, int orientation);
/// A copy with the given resolution (pixels per millimetre), which savers write as PNG pHYs / JFIF density.
int cvips_copy_with_resolution(VipsImage *in, VipsImage **out, double xres, double yres);

// MARK: Profiles and savers

/// A built-in profile ("srgb", "cmyk", "p3") copied into a g_malloc'd buffer (free with g_free).
void *cvips_profile_load(const char *name, size_t *length);
int cvips_jpegsave_buffer(VipsImage *in, void **buf, size_t *len, int quality, int strip);
/// Writes the pixels into a g_malloc'd buffer (free with g_free). NULL on failure.
void *cvips_write_to_memory(VipsImage *in, size_t *len);
