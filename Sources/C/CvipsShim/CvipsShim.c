#define _GNU_SOURCE
#include "CvipsShim.h"

#include <link.h>
#include <gmodule.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

// MARK: Library lifetime and process-wide settings

int cvips_init(const char *argv0) {
    return VIPS_INIT(argv0);
}

/// `dl_iterate_phdr`'s callback: keeps the directory of the loaded libvips (found by its file name).
static int find_libvips(struct dl_phdr_info *info, size_t size, void *directory) {
    (void)size;
    const char *slash = info->dlpi_name != NULL ? strrchr(info->dlpi_name, '/') : NULL;
    if (slash == NULL || strncmp(slash + 1, "libvips.so", strlen("libvips.so")) != 0) return 0;
    *(char **)directory = g_strndup(info->dlpi_name, (gsize)(slash - info->dlpi_name));
    return 1;
}

int cvips_load_heif_module(void) {
    if (vips_type_find("VipsForeignLoad", "heifload") != 0) return 0;
    char *directory = NULL;
    if (dl_iterate_phdr(find_libvips, &directory) == 0 || directory == NULL) return -1;
    char *path =
        g_strdup_printf("%s/vips-modules-%d.%d/vips-heif.so", directory, VIPS_MAJOR_VERSION, VIPS_MINOR_VERSION);
    // The module registers its types when opened, and makes itself resident (libvips' module/heif.c).
    GModule *module = g_module_open(path, G_MODULE_BIND_LAZY);
    g_free(path);
    g_free(directory);
    if (module == NULL) return -1;
    return vips_type_find("VipsForeignLoad", "heifload") != 0 ? 0 : -1;
}

static void drop_log_message(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data) {
    (void)domain;
    (void)level;
    (void)message;
    (void)data;
}

void cvips_silence_warnings(void) {
    g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO, drop_log_message, NULL);
}

static int failed_allocation_status = 1;

// GLib's g_malloc ends the process with g_error ("failed to allocate N bytes") when an allocation fails: SIGABRT,
// which a render helper's worker would read as a crash. This says it with the status instead.
static int is_failed_allocation(GLogLevelFlags level, const gchar *message) {
    return (level & G_LOG_LEVEL_ERROR) && message != NULL && strstr(message, "failed to allocate") != NULL;
}

static void exit_on_failed_allocation(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data) {
    if (is_failed_allocation(level, message)) _exit(failed_allocation_status);
    g_log_default_handler(domain, level, message, data);
}

static GLogWriterOutput exit_on_failed_allocation_structured(
    GLogLevelFlags level, const GLogField *fields, gsize count, gpointer data) {
    for (gsize i = 0; i < count; i++) {
        if (strcmp(fields[i].key, "MESSAGE") == 0 && fields[i].length < 0
            && is_failed_allocation(level, fields[i].value)) {
            _exit(failed_allocation_status);
        }
    }
    return g_log_writer_default(level, fields, count, data);
}

void cvips_exit_on_failed_allocation(int status) {
    failed_allocation_status = status;
    g_log_set_handler("GLib", G_LOG_LEVEL_ERROR | G_LOG_FLAG_FATAL, exit_on_failed_allocation, NULL);
    g_log_set_writer_func(exit_on_failed_allocation_structured, NULL, NULL);
}

int cvips_limit_malloc_arenas(int arenas) {
#if defined(__GLIBC__)
    if (getenv("MALLOC_ARENA_MAX") != NULL) {
        return 0;
    }
    return mallopt(M_ARENA_MAX, arenas) == 1 ? 1 : 0;
#else
    (void)arenas;
    return 0;
#endif
}

int cvips_version(int which) {
    return vips_version(which);
}

void cvips_block_all_loaders_except_allowed(void) {
    static const char *const allowed[] = {
        "VipsForeignLoadJpeg", "VipsForeignLoadPng", "VipsForeignLoadWebp",
        "VipsForeignLoadHeif", "VipsForeignLoadNsgif", "VipsForeignLoadTiff",
    };
    vips_block_untrusted_set(TRUE);
    vips_operation_block_set("VipsForeignLoad", TRUE);
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
        vips_operation_block_set(allowed[i], FALSE);
    }
}

// MARK: Handles and header access

void cvips_unref(VipsImage *image) {
    if (image != NULL) {
        g_object_unref(image);
    }
}

const char *cvips_interpretation_nick(VipsInterpretation interpretation) {
    const char *nick = vips_enum_nick(VIPS_TYPE_INTERPRETATION, interpretation);
    return nick != NULL ? nick : "unknown";
}

int cvips_get_int(VipsImage *image, const char *name, int *out) {
    if (vips_image_get_typeof(image, name) != G_TYPE_INT) {
        return 0;
    }
    return vips_image_get_int(image, name, out) == 0 ? 1 : 0;
}

int cvips_has_field(VipsImage *image, const char *name) {
    return vips_image_get_typeof(image, name) != 0 ? 1 : 0;
}

void cvips_set_icc_profile(VipsImage *image, const void *data, size_t length) {
    vips_image_set_blob_copy(image, VIPS_META_ICC_NAME, data, length);
}

void *cvips_copy_icc_profile(VipsImage *image, size_t *length) {
    const void *data = NULL;
    size_t size = 0;
    *length = 0;
    if (vips_image_get_typeof(image, VIPS_META_ICC_NAME) == 0) {
        return NULL;
    }
    if (vips_image_get_blob(image, VIPS_META_ICC_NAME, &data, &size) != 0 || data == NULL) {
        vips_error_clear();
        return NULL;
    }
    void *copy = g_malloc(size);
    memcpy(copy, data, size);
    *length = size;
    return copy;
}

char **cvips_field_names(VipsImage *image) {
    return vips_image_get_fields(image);
}

void cvips_free_strv(char **strv) {
    g_strfreev(strv);
}

void cvips_free(void *pointer) {
    g_free(pointer);
}

// MARK: Loaders

static VipsAccess access_mode(int sequential) {
    return sequential ? VIPS_ACCESS_SEQUENTIAL : VIPS_ACCESS_RANDOM;
}

int cvips_jpegload_buffer(const void *buf, size_t len, VipsImage **out, int shrink, int sequential,
                          VipsFailOn fail_on) {
    return vips_jpegload_buffer((void *)buf, len, out, "shrink", shrink, "access", access_mode(sequential),
                                "fail_on", fail_on, NULL);
}

int cvips_pngload_buffer(const void *buf, size_t len, VipsImage **out, int sequential, VipsFailOn fail_on) {
    return vips_pngload_buffer((void *)buf, len, out, "access", access_mode(sequential), "fail_on", fail_on,
                               NULL);
}

int cvips_webpload_buffer(const void *buf, size_t len, VipsImage **out, double scale, int sequential,
                          VipsFailOn fail_on) {
    return vips_webpload_buffer((void *)buf, len, out, "scale", scale, "access", access_mode(sequential),
                                "fail_on", fail_on, NULL);
}

int cvips_heifload_buffer(const void *buf, size_t len, VipsImage **out, int sequential, VipsFailOn fail_on) {
    return vips_heifload_buffer((void *)buf, len, out, "access", access_mode(sequential), "fail_on", fail_on,
                                NULL);
}

int cvips_heifload_thumbnail_buffer(const void *buf, size_t len, VipsImage **out, VipsFailOn fail_on) {
    return vips_heifload_buffer((void *)buf, len, out, "thumbnail", TRUE, "access", VIPS_ACCESS_SEQUENTIAL,
                                "fail_on", fail_on, NULL);
}

int cvips_gifload_buffer(const void *buf, size_t len, VipsImage **out, int sequential, VipsFailOn fail_on) {
    return vips_gifload_buffer((void *)buf, len, out, "access", access_mode(sequential), "fail_on", fail_on,
                               NULL);
}

int cvips_tiffload_buffer(const void *buf, size_t len, VipsImage **out, int sequential, VipsFailOn fail_on) {
    return vips_tiffload_buffer((void *)buf, len, out, "access", access_mode(sequential), "fail_on", fail_on,
                                NULL);
}

static void free_pixels(VipsImage *image, void *data) {
    (void)image;
    free(data);
}

VipsImage *cvips_image_take_pixels(void *data, size_t length, int width, int height, int bands,
                                   VipsInterpretation interpretation) {
    return cvips_image_take_samples(data, length, width, height, bands, VIPS_FORMAT_UCHAR, interpretation);
}

VipsImage *cvips_image_take_samples(void *data, size_t length, int width, int height, int bands,
                                    VipsBandFormat format, VipsInterpretation interpretation) {
    VipsImage *image = vips_image_new_from_memory(data, length, width, height, bands, format);
    if (image == NULL) {
        free(data);
        return NULL;
    }
    image->Type = interpretation;
    g_signal_connect(image, "postclose", G_CALLBACK(free_pixels), data);
    return image;
}

// MARK: Operations

int cvips_extract_area(VipsImage *in, VipsImage **out, int left, int top, int width, int height) {
    return vips_extract_area(in, out, left, top, width, height, NULL);
}

int cvips_extract_band(VipsImage *in, VipsImage **out, int band, int n) {
    return vips_extract_band(in, out, band, "n", n, NULL);
}

int cvips_bandjoin2(VipsImage *a, VipsImage *b, VipsImage **out) {
    return vips_bandjoin2(a, b, out, NULL);
}

int cvips_icc_transform(VipsImage *in, VipsImage **out, const char *output_profile, const char *input_profile,
                        int embedded, int depth) {
    if (input_profile != NULL) {
        return vips_icc_transform(in, out, output_profile, "input_profile", input_profile, "embedded",
                                  embedded ? TRUE : FALSE, "depth", depth, NULL);
    }
    return vips_icc_transform(in, out, output_profile, "embedded", embedded ? TRUE : FALSE, "depth", depth, NULL);
}

int cvips_colourspace(VipsImage *in, VipsImage **out, VipsInterpretation space) {
    return vips_colourspace(in, out, space, NULL);
}

int cvips_cast(VipsImage *in, VipsImage **out, VipsBandFormat format, int shift) {
    return vips_cast(in, out, format, "shift", shift ? TRUE : FALSE, NULL);
}

int cvips_flatten(VipsImage *in, VipsImage **out, double red, double green, double blue, double max_alpha) {
    double values[3] = {red, green, blue};
    VipsArrayDouble *background = vips_array_double_new(values, 3);
    int result = vips_flatten(in, out, "background", background, "max_alpha", max_alpha, NULL);
    vips_area_unref(VIPS_AREA(background));
    return result;
}

int cvips_resize(VipsImage *in, VipsImage **out, double hscale, double vscale, VipsKernel kernel) {
    return vips_resize(in, out, hscale, "vscale", vscale, "kernel", kernel, NULL);
}

int cvips_shrink(VipsImage *in, VipsImage **out, int factor) {
    return vips_shrink(in, out, (double)factor, (double)factor, NULL);
}

int cvips_embed(VipsImage *in, VipsImage **out, int x, int y, int width, int height, VipsExtend extend) {
    return vips_embed(in, out, x, y, width, height, "extend", extend, NULL);
}

int cvips_rot(VipsImage *in, VipsImage **out, VipsAngle angle) {
    return vips_rot(in, out, angle, NULL);
}

int cvips_flip(VipsImage *in, VipsImage **out, VipsDirection direction) {
    return vips_flip(in, out, direction, NULL);
}

int cvips_autorot(VipsImage *in, VipsImage **out) {
    return vips_autorot(in, out, NULL);
}

int cvips_copy(VipsImage *in, VipsImage **out) {
    return vips_copy(in, out, NULL);
}

int cvips_copy_as_srgb(VipsImage *in, VipsImage **out) {
    return vips_copy(in, out, "interpretation", VIPS_INTERPRETATION_sRGB, NULL);
}

void cvips_set_orientation(VipsImage *image, int orientation) {
    vips_image_set_int(image, VIPS_META_ORIENTATION, orientation);
}

int cvips_copy_with_resolution(VipsImage *in, VipsImage **out, double xres, double yres) {
    return vips_copy(in, out, "xres", xres, "yres", yres, NULL);
}

// MARK: Profiles and savers

void *cvips_profile_load(const char *name, size_t *length) {
    VipsBlob *blob = NULL;
    *length = 0;
    if (vips_profile_load(name, &blob, NULL) != 0 || blob == NULL) {
        return NULL;
    }
    size_t size = 0;
    const void *data = vips_blob_get(blob, &size);
    void *copy = NULL;
    if (data != NULL && size > 0) {
        copy = g_malloc(size);
        memcpy(copy, data, size);
        *length = size;
    }
    vips_area_unref(VIPS_AREA(blob));
    return copy;
}

int cvips_jpegsave_buffer(VipsImage *in, void **buf, size_t *len, int quality, int strip) {
    return vips_jpegsave_buffer(in, buf, len, "Q", quality, "optimize_coding", TRUE, "strip", strip ? TRUE : FALSE,
                                NULL);
}

void *cvips_write_to_memory(VipsImage *in, size_t *len) {
    return vips_image_write_to_memory(in, len);
}
