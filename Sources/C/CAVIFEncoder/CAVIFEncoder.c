// See CAVIFEncoder.h.
#include "CAVIFEncoder.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libheif/heif.h>

// heif_init loads the plugins (the AV1 encoder among them) from libheif's plugin directory: once per process,
// never undone (a render helper warms up before its lockdown, which allows no file opens after it).
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static struct heif_error init_error;

static void init_library(void) { init_error = heif_init(NULL); }

static int initialised(char *message) {
    pthread_once(&init_once, init_library);
    if (init_error.code != heif_error_Ok) {
        if (message) snprintf(message, CAVIF_MESSAGE_LENGTH, "heif_init: %s", init_error.message);
        return 0;
    }
    return 1;
}

const char *cavif_encoder_name(void) {
    if (!initialised(NULL)) return NULL;
    const struct heif_encoder_descriptor *descriptor = NULL;
    if (heif_get_encoder_descriptors(heif_compression_AV1, NULL, &descriptor, 1) < 1 || !descriptor) return NULL;
    return heif_encoder_descriptor_get_name(descriptor);
}

typedef struct {
    uint8_t *data;
    size_t length;
    size_t capacity;
    int failed;
} output_buffer;

static struct heif_error write_output(struct heif_context *context, const void *data, size_t size, void *userdata) {
    (void)context;
    output_buffer *output = userdata;
    struct heif_error ok = {heif_error_Ok, heif_suberror_Unspecified, "Success"};
    if (size > output->capacity - output->length) {
        size_t capacity = output->capacity ? output->capacity : 16384;
        while (capacity - output->length < size) capacity *= 2;
        uint8_t *grown = realloc(output->data, capacity);
        if (!grown) {
            output->failed = 1;
            struct heif_error failed = {heif_error_Memory_allocation_error, heif_suberror_Unspecified,
                                        "out of memory"};
            return failed;
        }
        output->data = grown;
        output->capacity = capacity;
    }
    memcpy(output->data + output->length, data, size);
    output->length += size;
    return ok;
}

/// libheif's own allocation failures, and the encoder plugin's (aom reports "Memory allocation error" through
/// heif_error_Encoder_plugin_error): under a render helper's address-space cap both are the job's memory, not its file.
static cavif_status failure(struct heif_error error, const char *step, char *message) {
    snprintf(message, CAVIF_MESSAGE_LENGTH, "%s: %s", step, error.message ? error.message : "unknown error");
    int memory = error.code == heif_error_Memory_allocation_error || (error.message && strstr(error.message, "emory"));
    return memory ? CAVIF_NO_MEMORY : CAVIF_ERROR;
}

cavif_status cavif_encode_rgb(const uint8_t *pixels, int width, int height, size_t stride, const uint8_t *icc,
                              size_t icc_length, cavif_settings settings, uint8_t **out, size_t *out_length,
                              char *message) {
    *out = NULL;
    *out_length = 0;
    message[0] = 0;
    if (!initialised(message)) return CAVIF_ERROR;

    cavif_status status = CAVIF_OK;
    struct heif_context *context = heif_context_alloc();
    struct heif_encoder *encoder = NULL;
    struct heif_image *image = NULL;
    struct heif_encoding_options *options = NULL;
    output_buffer output = {0};
    struct heif_error error;
    if (!context) {
        snprintf(message, CAVIF_MESSAGE_LENGTH, "heif_context_alloc failed");
        return CAVIF_NO_MEMORY;
    }

#define CHECK(call, step)                                                                                            \
    do {                                                                                                             \
        error = (call);                                                                                              \
        if (error.code != heif_error_Ok) {                                                                           \
            status = failure(error, step, message);                                                                  \
            goto done;                                                                                               \
        }                                                                                                            \
    } while (0)

    CHECK(heif_context_get_encoder_for_format(context, heif_compression_AV1, &encoder), "no AV1 encoder");
    CHECK(heif_encoder_set_lossy_quality(encoder, settings.quality), "quality");
    CHECK(heif_encoder_set_lossless(encoder, 0), "lossless");
    CHECK(heif_encoder_set_parameter_integer(encoder, "speed", settings.speed), "speed");
    CHECK(heif_encoder_set_parameter_integer(encoder, "threads", settings.threads), "threads");
    CHECK(heif_encoder_set_parameter_string(encoder, "chroma", "420"), "chroma");

    CHECK(heif_image_create(width, height, heif_colorspace_RGB, heif_chroma_interleaved_RGB, &image), "image");
    CHECK(heif_image_add_plane(image, heif_channel_interleaved, width, height, 8), "plane");
    int plane_stride = 0;
    uint8_t *plane = heif_image_get_plane(image, heif_channel_interleaved, &plane_stride);
    if (!plane) {
        snprintf(message, CAVIF_MESSAGE_LENGTH, "no interleaved plane");
        status = CAVIF_NO_MEMORY;
        goto done;
    }
    for (int y = 0; y < height; y++) {
        memcpy(plane + (size_t)y * (size_t)plane_stride, pixels + (size_t)y * stride, (size_t)width * 3);
    }
    if (icc && icc_length) CHECK(heif_image_set_raw_color_profile(image, "prof", icc, icc_length), "profile");

    options = heif_encoding_options_alloc();
    if (!options) {
        snprintf(message, CAVIF_MESSAGE_LENGTH, "heif_encoding_options_alloc failed");
        status = CAVIF_NO_MEMORY;
        goto done;
    }
    options->save_alpha_channel = 0;
    CHECK(heif_context_encode_image(context, image, encoder, options, NULL), "encode");

    struct heif_writer writer = {1, write_output};
    CHECK(heif_context_write(context, &writer, &output), "write");
    if (output.failed) {
        snprintf(message, CAVIF_MESSAGE_LENGTH, "write: out of memory");
        status = CAVIF_NO_MEMORY;
        goto done;
    }
    *out = output.data;
    *out_length = output.length;
    output.data = NULL;

done:
#undef CHECK
    free(output.data);
    if (options) heif_encoding_options_free(options);
    if (image) heif_image_release(image);
    if (encoder) heif_encoder_release(encoder);
    heif_context_free(context);
    return status;
}
