// YuNet 2023mar over OpenCV's dnn module (CFaceDetect.h). The decoding follows the model's own post-processing
// (opencv_zoo's YuNet, as OpenCV 4.8's FaceDetectorYN does it): per stride 8, 16 and 32 a grid of anchors, each
// with class and objectness scores (score = sqrt(cls·obj)), a box (centre offset in cells, log size) and five
// landmarks; then non-maximum suppression.
#include "CFaceDetect.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>

struct cface_detector {
    cv::dnn::Net net;
    int canvasWidth;
    int canvasHeight;
    std::vector<cv::String> outputs;
};

namespace {
const int strides[3] = {8, 16, 32};
const char *const outputNames[12] = {"cls_8",  "cls_16",  "cls_32",  "obj_8", "obj_16", "obj_32",
                                     "bbox_8", "bbox_16", "bbox_32", "kps_8", "kps_16", "kps_32"};

void copyError(const char *message, char *error, size_t error_len) {
    if (error == nullptr || error_len == 0) return;
    std::strncpy(error, message, error_len - 1);
    error[error_len - 1] = '\0';
}

float clamp01(float value) { return std::min(std::max(value, 0.f), 1.f); }

float intersectionOverUnion(const cface_face &a, const cface_face &b) {
    float left = std::max(a.x, b.x), top = std::max(a.y, b.y);
    float right = std::min(a.x + a.width, b.x + b.width), bottom = std::min(a.y + a.height, b.y + b.height);
    float inter = std::max(0.f, right - left) * std::max(0.f, bottom - top);
    float uni = a.width * a.height + b.width * b.height - inter;
    return uni > 0 ? inter / uni : 0;
}
}  // namespace

static bool validCanvasSide(int side) { return side >= 32 && side <= 1024 && side % 32 == 0; }

extern "C" cface_detector *cface_detector_new(const uint8_t *model, size_t model_len, int canvas_width,
                                              int canvas_height, int *status, char *error, size_t error_len) {
    int dummy;
    if (status == nullptr) status = &dummy;
    if (model == nullptr || model_len == 0 || !validCanvasSide(canvas_width) || !validCanvasSide(canvas_height)) {
        *status = CFACE_BAD_INPUT;
        copyError("bad model buffer or canvas size", error, error_len);
        return nullptr;
    }
    try {
        cv::setNumThreads(1);
        cv::dnn::Net net = cv::dnn::readNetFromONNX(reinterpret_cast<const char *>(model), model_len);
        if (net.empty()) {
            *status = CFACE_BAD_MODEL;
            copyError("the model has no layers", error, error_len);
            return nullptr;
        }
        net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
        net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
        std::vector<cv::String> have = net.getUnconnectedOutLayersNames();
        for (const char *name : outputNames) {
            if (std::find(have.begin(), have.end(), cv::String(name)) == have.end()) {
                *status = CFACE_BAD_MODEL;
                copyError("the model lacks one of YuNet's outputs", error, error_len);
                return nullptr;
            }
        }
        auto *detector = new cface_detector{net, canvas_width, canvas_height,
                                            std::vector<cv::String>(outputNames, outputNames + 12)};
        *status = CFACE_OK;
        return detector;
    } catch (const cv::Exception &e) {
        *status = CFACE_BAD_MODEL;
        copyError(e.what(), error, error_len);
    } catch (const std::bad_alloc &) {
        *status = CFACE_NO_MEMORY;
        copyError("out of memory", error, error_len);
    } catch (const std::exception &e) {
        *status = CFACE_BAD_MODEL;
        copyError(e.what(), error, error_len);
    }
    return nullptr;
}

extern "C" void cface_detector_free(cface_detector *detector) { delete detector; }

/// `source` resized to `width × height`: halved by exact 2 × 2 means while the half still covers the target (OpenCV's
/// vectorised path for an integer ratio; a trailing odd row or column is left out), then bilinear to the exact size.
/// The same averaging as a box filter over the ratio, at a fraction of INTER_AREA's cost for a non-integer ratio.
static cv::Mat shrunk(const cv::Mat &source, int width, int height) {
    cv::Mat current = source;
    while (current.cols / 2 >= width && current.rows / 2 >= height) {
        cv::Mat half;
        cv::resize(current(cv::Rect(0, 0, current.cols & ~1, current.rows & ~1)), half,
                   cv::Size(current.cols / 2, current.rows / 2), 0, 0, cv::INTER_AREA);
        current = half;
    }
    if (current.cols == width && current.rows == height) return current;
    cv::Mat out;
    cv::resize(current, out, cv::Size(width, height), 0, 0, cv::INTER_LINEAR);
    return out;
}

/// `stored` turned upright by EXIF `orientation`: a clockwise rotation first, then a left-right mirror (libvips'
/// autorot, and `Orientation` in Imaging).
static cv::Mat upright(const cv::Mat &stored, int orientation) {
    cv::Mat turned = stored;
    switch (orientation) {
    case 3:
    case 4: cv::rotate(stored, turned, cv::ROTATE_180); break;
    case 5:
    case 6: cv::rotate(stored, turned, cv::ROTATE_90_CLOCKWISE); break;
    case 7:
    case 8: cv::rotate(stored, turned, cv::ROTATE_90_COUNTERCLOCKWISE); break;
    default: break;
    }
    if (orientation == 2 || orientation == 4 || orientation == 5 || orientation == 7) {
        cv::Mat mirrored;
        cv::flip(turned, mirrored, 1);
        return mirrored;
    }
    return turned;
}

extern "C" int cface_detect(cface_detector *detector, const uint8_t *pixels, int width, int height, size_t stride,
                            int bands, int orientation, float min_score, float nms_iou, cface_face *faces,
                            int capacity, int *count, char *error, size_t error_len) {
    if (count != nullptr) *count = 0;
    if (detector == nullptr || pixels == nullptr || faces == nullptr || count == nullptr || width <= 0 ||
        height <= 0 || capacity < 0 || (bands != 1 && bands != 3) || orientation < 1 || orientation > 8 ||
        stride < size_t(width) * size_t(bands)) {
        copyError("bad detection input", error, error_len);
        return CFACE_BAD_INPUT;
    }
    try {
        const int canvasWidth = detector->canvasWidth, canvasHeight = detector->canvasHeight;
        const bool swaps = orientation >= 5;
        const int uprightWidth = swaps ? height : width, uprightHeight = swaps ? width : height;
        // The upright image fitted into the canvas, aspect kept, at least one pixel on each side, top-left.
        const double scale = std::min(double(canvasWidth) / uprightWidth, double(canvasHeight) / uprightHeight);
        const int fittedWidth = std::max(1, std::min(canvasWidth, int(std::lround(uprightWidth * scale))));
        const int fittedHeight = std::max(1, std::min(canvasHeight, int(std::lround(uprightHeight * scale))));
        // Resized in the stored orientation, then turned: the turn moves the canvas's pixels, not the input's.
        const cv::Mat source(height, width, bands == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t *>(pixels), stride);
        cv::Mat fitted = upright(shrunk(source, swaps ? fittedHeight : fittedWidth, swaps ? fittedWidth : fittedHeight),
                                 orientation);
        cv::Mat padded(canvasHeight, canvasWidth, CV_8UC3, cv::Scalar(0, 0, 0));
        cv::Mat corner = padded(cv::Rect(0, 0, fittedWidth, fittedHeight));
        if (bands == 1) {
            cv::cvtColor(fitted, corner, cv::COLOR_GRAY2RGB);
        } else {
            fitted.copyTo(corner);
        }
        // YuNet takes BGR floats 0...255 without normalisation.
        cv::Mat blob = cv::dnn::blobFromImage(padded, 1.0, cv::Size(), cv::Scalar(), true, false, CV_32F);
        detector->net.setInput(blob);
        std::vector<cv::Mat> out;
        detector->net.forward(out, detector->outputs);
        if (out.size() != 12) {
            copyError("unexpected number of outputs", error, error_len);
            return CFACE_BAD_MODEL;
        }

        // Back to the upright input's pixels: the canvas shows it at (fittedWidth / uprightWidth, fittedHeight /
        // uprightHeight).
        const float backX = float(uprightWidth) / float(fittedWidth), backY = float(uprightHeight) / float(fittedHeight);
        std::vector<cface_face> candidates;
        for (int level = 0; level < 3; ++level) {
            const int stride = strides[level];
            const int cols = canvasWidth / stride, rows = canvasHeight / stride;
            const size_t cells = size_t(cols) * rows;
            const cv::Mat &cls = out[level], &obj = out[level + 3], &bbox = out[level + 6], &kps = out[level + 9];
            if (cls.total() != cells || obj.total() != cells || bbox.total() != cells * 4 ||
                kps.total() != cells * 10 || cls.type() != CV_32F || obj.type() != CV_32F ||
                bbox.type() != CV_32F || kps.type() != CV_32F || !cls.isContinuous() || !obj.isContinuous() ||
                !bbox.isContinuous() || !kps.isContinuous()) {
                copyError("unexpected output shape", error, error_len);
                return CFACE_BAD_MODEL;
            }
            const float *clsV = cls.ptr<float>(), *objV = obj.ptr<float>();
            const float *bboxV = bbox.ptr<float>(), *kpsV = kps.ptr<float>();
            for (int r = 0; r < rows; ++r) {
                for (int c = 0; c < cols; ++c) {
                    const size_t idx = size_t(r) * cols + c;
                    const float score = std::sqrt(clamp01(clsV[idx]) * clamp01(objV[idx]));
                    if (!(score >= min_score)) continue;
                    const float cx = (c + bboxV[idx * 4 + 0]) * stride;
                    const float cy = (r + bboxV[idx * 4 + 1]) * stride;
                    const float w = std::exp(bboxV[idx * 4 + 2]) * stride;
                    const float h = std::exp(bboxV[idx * 4 + 3]) * stride;
                    if (!std::isfinite(cx) || !std::isfinite(cy) || !std::isfinite(w) || !std::isfinite(h) ||
                        w <= 0 || h <= 0) {
                        continue;
                    }
                    cface_face face;
                    face.x = (cx - w / 2) * backX;
                    face.y = (cy - h / 2) * backY;
                    face.width = w * backX;
                    face.height = h * backY;
                    face.score = score;
                    for (int n = 0; n < 5; ++n) {
                        face.landmarks[2 * n] = (kpsV[idx * 10 + 2 * n] + c) * stride * backX;
                        face.landmarks[2 * n + 1] = (kpsV[idx * 10 + 2 * n + 1] + r) * stride * backY;
                    }
                    candidates.push_back(face);
                }
            }
        }
        // Best first; equal scores keep the anchors' order, so the result is deterministic.
        std::stable_sort(candidates.begin(), candidates.end(),
                         [](const cface_face &a, const cface_face &b) { return a.score > b.score; });
        int kept = 0;
        std::vector<cface_face> chosen;
        for (const cface_face &candidate : candidates) {
            if (kept >= capacity) break;
            bool overlaps = false;
            for (const cface_face &other : chosen) {
                if (intersectionOverUnion(candidate, other) > nms_iou) {
                    overlaps = true;
                    break;
                }
            }
            if (overlaps) continue;
            chosen.push_back(candidate);
            faces[kept++] = candidate;
        }
        *count = kept;
        return CFACE_OK;
    } catch (const cv::Exception &e) {
        copyError(e.what(), error, error_len);
        return CFACE_OPENCV_ERROR;
    } catch (const std::bad_alloc &) {
        copyError("out of memory", error, error_len);
        return CFACE_NO_MEMORY;
    } catch (const std::exception &e) {
        copyError(e.what(), error, error_len);
        return CFACE_OPENCV_ERROR;
    }
}
