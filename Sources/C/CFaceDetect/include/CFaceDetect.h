// The face detector's C ABI for Imaging (docs/ARCHITECTURE.md §2, "Faces"): YuNet 2023mar run by OpenCV's dnn
// module on one fixed canvas per detector (the image letterboxed onto it), its 12 outputs decoded here (OpenCV 4.6's
// cv::FaceDetectorYN rejects this model). One detector per thread; a detector is never shared between threads.
#ifndef CFACEDETECT_H
#define CFACEDETECT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cface_detector cface_detector;

/// One face on the input image's pixels: its box, YuNet's score (sqrt(cls·obj), 0...1) and five landmarks
/// (right eye, left eye, nose tip, right and left mouth corners, x then y).
typedef struct cface_face {
    float x, y, width, height;
    float score;
    float landmarks[10];
} cface_face;

enum {
    CFACE_OK = 0,
    /// The model could not be parsed or has not the outputs YuNet 2023mar has.
    CFACE_BAD_MODEL = 1,
    /// The input is empty or its sizes are not positive.
    CFACE_BAD_INPUT = 2,
    /// OpenCV threw (its message is in the error buffer).
    CFACE_OPENCV_ERROR = 3,
    /// Out of memory.
    CFACE_NO_MEMORY = 4,
};

/// Makes a detector from the model's bytes (copied by OpenCV) for a canvas of `canvas_width × canvas_height`
/// pixels (each a multiple of 32, 32...1024). The network is built for that shape and never reshaped. OpenCV runs on the caller's thread only (a render has one core): the first
/// detector sets its thread count to 1 for the process. On failure returns NULL and, when `status` is not NULL, the reason; `error` (`error_len` bytes) gets
/// OpenCV's message.
cface_detector *cface_detector_new(const uint8_t *model, size_t model_len, int canvas_width, int canvas_height,
                                   int *status, char *error, size_t error_len);

void cface_detector_free(cface_detector *detector);

/// Finds faces on `width × height` pixels of `bands` bytes each (1: grey, 3: RGB; rows `stride` bytes apart) stored
/// as EXIF `orientation` (1–8) says, i.e. shown upright after a clockwise rotation (3, 4: 180°; 5, 6: 90°; 7, 8:
/// 270°) and then, for 2, 4, 5 and 7, a left-right mirror. The image is resized to fit the canvas upright (2 × 2
/// means while they halve it, then bilinear; aspect kept), turned, and placed in the canvas's top-left corner on
/// black. Candidates scoring at least `min_score` are kept, overlapping ones suppressed (IoU above `nms_iou`), and
/// the best `capacity` written to `faces`, best first; `*count` is how many were written. Coordinates are on the
/// upright input's pixels (`height × width` for orientations 5–8).
int cface_detect(cface_detector *detector, const uint8_t *pixels, int width, int height, size_t stride, int bands,
                 int orientation, float min_score, float nms_iou, cface_face *faces, int capacity, int *count,
                 char *error, size_t error_len);

#ifdef __cplusplus
}
#endif

#endif
