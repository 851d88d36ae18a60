#include "CHEIFConversion.h"

#include <math.h>

/// Kr and Kb of the nclx matrices with fixed values (ISO/IEC 23091-2), as libheif has them; 0 for the
/// others (identity, YCgCo, those derived from the primaries, reserved ones).
static int matrix_weights(int matrix, float *kr, float *kb) {
    switch (matrix) {
    case 1: *kr = 0.2126f; *kb = 0.0722f; return 1;
    case 4: *kr = 0.30f; *kb = 0.11f; return 1;
    case 5:
    case 6: *kr = 0.299f; *kb = 0.114f; return 1;
    case 7: *kr = 0.212f; *kb = 0.087f; return 1;
    case 9:
    case 10: *kr = 0.2627f; *kb = 0.0593f; return 1;
    default: return 0;
    }
}

int cheif_decoded_matrix(const struct heif_image *image, int bits, ycbcr_matrix *out) {
#pragma STDC FP_CONTRACT OFF
    if (bits < 8 || bits > 16) {
        return 0;
    }
    int matrix = -1;
    int full_range = 1;
    struct heif_color_profile_nclx *nclx = NULL;
    if (heif_image_get_nclx_color_profile(image, &nclx).code == heif_error_Ok && nclx != NULL) {
        matrix = (int)nclx->matrix_coefficients;
        full_range = nclx->full_range_flag != 0;
        heif_nclx_color_profile_free(nclx);
    }
    float kr = 0;
    float kb = 0;
    const int weighted = matrix_weights(matrix, &kr, &kb);
    // libheif's float coefficients, in its order of operations.
    float r_cr = 2 * (-kr + 1);
    float g_cb = 2 * kb * (-kb + 1) / (kb + kr - 1);
    float g_cr = 2 * kr * (-kr + 1) / (kb + kr - 1);
    float b_cb = 2 * (-kb + 1);
    if (!weighted) {
        // No nclx, or an unspecified matrix: libheif's defaults (BT.601, written out). Others are converted by
        // other operations (0 identity, 8 YCgCo, 11 and 14), from the primaries (12, 13), or are reserved.
        if (matrix != -1 && matrix != heif_matrix_coefficients_unspecified) {
            return 0;
        }
        r_cr = 1.402f;
        g_cb = -0.344136f;
        g_cr = -0.714136f;
        b_cb = 1.772f;
    }
    *out = (ycbcr_matrix){
        .bits = bits,
        .r_cr_f = r_cr,
        .g_cb_f = g_cb,
        .g_cr_f = g_cr,
        .b_cb_f = b_cb,
        .full_range = full_range,
    };
    if (bits > 8) {
        return 1;
    }
    // libheif's 8-bit operation takes full range only, and rounds the coefficients to 1/256.
    if (!full_range) {
        return 0;
    }
    out->r_cr = (int)lroundf(256 * r_cr);
    out->g_cb = (int)lroundf(256 * g_cb);
    out->g_cr = (int)lroundf(256 * g_cr);
    out->b_cb = (int)lroundf(256 * b_cb);
    return 1;
}
