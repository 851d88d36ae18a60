// See CWebPEncoder.h.
#include "CWebPEncoder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <webp/encode.h>
#include <webp/mux.h>

static cwebp_status fail(char *message, cwebp_status status, const char *text) {
    snprintf(message, CWEBP_MESSAGE_LENGTH, "%s", text);
    return status;
}

/// The file with `icc` as its ICCP chunk (libwebpmux adds the VP8X header that announces it).
static cwebp_status with_profile(const uint8_t *bitstream, size_t length, const uint8_t *icc, size_t icc_length,
                                 uint8_t **out, size_t *out_length, char *message) {
    WebPMux *mux = WebPMuxNew();
    if (!mux) return fail(message, CWEBP_NO_MEMORY, "WebPMuxNew failed");
    WebPData image = {bitstream, length};
    WebPData profile = {icc, icc_length};
    WebPData assembled = {NULL, 0};
    cwebp_status status = CWEBP_OK;
    if (WebPMuxSetImage(mux, &image, 0) != WEBP_MUX_OK) {
        status = fail(message, CWEBP_ERROR, "WebPMuxSetImage failed");
    } else if (WebPMuxSetChunk(mux, "ICCP", &profile, 0) != WEBP_MUX_OK) {
        status = fail(message, CWEBP_ERROR, "WebPMuxSetChunk(ICCP) failed");
    } else if (WebPMuxAssemble(mux, &assembled) != WEBP_MUX_OK) {
        status = fail(message, CWEBP_NO_MEMORY, "WebPMuxAssemble failed");
    } else {
        // WebPDataClear frees with WebPFree (free): hand the buffer over as it is.
        *out = (uint8_t *)assembled.bytes;
        *out_length = assembled.size;
    }
    WebPMuxDelete(mux);
    return status;
}

cwebp_status cwebp_encode_rgb(const uint8_t *pixels, int width, int height, size_t stride, int quality, int method,
                              const uint8_t *icc, size_t icc_length, uint8_t **out, size_t *out_length,
                              char *message) {
    *out = NULL;
    *out_length = 0;
    message[0] = 0;
    WebPConfig config;
    WebPPicture picture;
    if (!WebPConfigInit(&config) || !WebPPictureInit(&picture)) {
        return fail(message, CWEBP_ERROR, "libwebp version mismatch");
    }
    config.quality = (float)quality;
    config.method = method;
    config.thread_level = 0;
    if (!WebPValidateConfig(&config)) return fail(message, CWEBP_ERROR, "invalid WebP configuration");
    picture.use_argb = 0;
    picture.width = width;
    picture.height = height;
    if (!WebPPictureImportRGB(&picture, pixels, (int)stride)) {
        WebPPictureFree(&picture);
        return fail(message, CWEBP_NO_MEMORY, "WebPPictureImportRGB failed");
    }
    WebPMemoryWriter writer;
    WebPMemoryWriterInit(&writer);
    picture.writer = WebPMemoryWrite;
    picture.custom_ptr = &writer;
    int encoded = WebPEncode(&config, &picture);
    int error = picture.error_code;
    WebPPictureFree(&picture);
    if (!encoded) {
        WebPMemoryWriterClear(&writer);
        snprintf(message, CWEBP_MESSAGE_LENGTH, "WebPEncode failed (error %d)", error);
        return error == VP8_ENC_ERROR_OUT_OF_MEMORY || error == VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY
                   ? CWEBP_NO_MEMORY
                   : CWEBP_ERROR;
    }
    if (!icc || !icc_length) {
        *out = writer.mem;
        *out_length = writer.size;
        return CWEBP_OK;
    }
    cwebp_status status = with_profile(writer.mem, writer.size, icc, icc_length, out, out_length, message);
    WebPMemoryWriterClear(&writer);
    return status;
}
