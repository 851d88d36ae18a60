// A region decoder for HEIF/AVIF on libheif's API, for the Imaging module (docs/ARCHITECTURE.md §2).
//
// Opens the primary image from memory under libheif's security limits, reads its layout (the `ispe`
// size before any transformation, the irot/imir/clap properties in order, the tiling of a grid) and
// decodes only the grid tiles one rectangle of the *stored* image touches, copying their overlap into
// one interleaved buffer — box-shrunk by an integer factor as it is copied when the caller asks (each
// tile's decoded image is freed before the next is decoded, so the full-resolution rectangle is never
// held). 4:2:0 tiles (8 to 16 bits, no alpha) come from libheif as planes and are turned into RGB here, only the
// pixels the rectangle reads, exactly as libheif's own conversion would turn the whole tile (CHEIFConversion.h).
// Transformations are never applied here (the caller turns the small square upright), and neither the gain map nor any other auxiliary image is decoded. A non-grid image
// (most AVIFs, small HEICs) is decoded whole, untransformed, and cut. The pixels are what libvips'
// heifload gives: RGB(A), 8-bit, or above 8 bits 16-bit native samples shifted up (`v << (16 - bits)`).
//
// libheif's types stay inside the implementation: this header uses plain C types only.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef enum {
    CHEIF_OK = 0,
    /// libheif refused the file or a tile (damaged, truncated, unsupported codec). `message` says why.
    CHEIF_ERROR = 1,
    CHEIF_NO_MEMORY = 2,
    /// The cancellation flag was set (polled between tiles).
    CHEIF_CANCELLED = 3,
    /// Outside what this decoder handles (the caller decodes with libvips instead). `message` says which.
    CHEIF_UNSUPPORTED = 4,
    /// A security limit: libheif's own, or the layout's checks against `ispe` and the caller's limits.
    CHEIF_LIMIT = 5,
} cheif_status;

#define CHEIF_MESSAGE_LENGTH 256
/// The most transformation properties reported (real files have at most irot, imir and clap).
#define CHEIF_MAX_TRANSFORMS 8

typedef enum {
    /// `value`: quarter turns anticlockwise (1–3).
    CHEIF_TRANSFORM_ROTATE = 1,
    /// `value` 0: the rows are reversed (top–bottom); 1: each row is reversed (left–right).
    CHEIF_TRANSFORM_MIRROR = 2,
    /// A clean aperture (crop).
    CHEIF_TRANSFORM_CROP = 3,
} cheif_transform_kind;

typedef struct {
    cheif_transform_kind kind;
    int value;
} cheif_transform;

/// What the caller allows before any decode.
typedef struct {
    /// Most pixels of the image (and of one tile).
    uint64_t max_pixels;
    /// Most tiles of a grid.
    uint32_t max_tiles;
} cheif_limits;

/// The primary image's layout, read without decoding any pixel.
typedef struct {
    /// The stored size (`ispe`), before irot/imir/clap.
    int width;
    int height;
    /// The size libheif displays (after the transformations).
    int display_width;
    int display_height;
    /// The transformation properties, in the order libheif applies them.
    int transform_count;
    cheif_transform transforms[CHEIF_MAX_TRANSFORMS];
    /// The grid (1 × 1 for a non-grid image, whose one tile is the image).
    int columns;
    int rows;
    int tile_width;
    int tile_height;
    /// Luma bits per sample (8, 10, 12).
    int bits;
    int has_alpha;
    /// The `colr` box: an ICC profile (prof/rICC) of this many bytes, 0 when none.
    size_t icc_length;
    /// nclx (when there is no ICC profile): 1 when present, then its code points and libheif's
    /// chromaticities for the primaries (red, green, blue, white: x then y).
    int has_nclx;
    int nclx_primaries;
    int nclx_transfer;
    float nclx_chromaticities[8];
    /// The largest thumbnail item of the primary image (its display size), 0 × 0 when none.
    int thumbnail_width;
    int thumbnail_height;
    char message[CHEIF_MESSAGE_LENGTH];
} cheif_info;

/// An open file: a libheif context over the caller's bytes (not copied: they must outlive it) and
/// the primary image's handle.
typedef struct cheif_file cheif_file;

/// Opens `data` under libheif's security limits tightened to `limits`, reads the primary image's
/// layout into `info` and checks it: the grid's tiles must cover the `ispe` size exactly (no tile
/// wholly outside it) and every tile item must be an image (libheif's tile API crashes on one that is not),
/// within `limits`. On CHEIF_OK `*out` must be closed with cheif_close.
cheif_status cheif_open(const unsigned char *data, size_t length, const cheif_limits *limits, cheif_file **out,
                        cheif_info *info);

void cheif_close(cheif_file *file);

/// Copies the primary image's ICC profile (`info.icc_length` bytes) into `buffer`.
cheif_status cheif_copy_icc(cheif_file *file, unsigned char *buffer, size_t length);

/// One rectangle to decode, in stored (untransformed) pixels of the primary image, or of its largest
/// thumbnail (`thumbnail` nonzero: displayed pixels, libheif applies the thumbnail's transformations),
/// reduced by an integer box shrink as it is copied: with `shrink` f ≥ 1, output pixel (i, j) is the
/// mean of the f × f source pixels from (`origin_x` + (x + i) f, `origin_y` + (y + j) f), so x, y,
/// width and height are in pixels of the shrunk image and `origin_*` (0 ≤ origin < f) aligns its boxes
/// (0, or the image's size modulo f where the displayed image starts at the far edge). At f = 1 the
/// overlap is copied as decoded.
typedef struct cheif_cores cheif_cores;

typedef struct {
    int x;
    int y;
    int width;
    int height;
    int shrink;
    int origin_x;
    int origin_y;
    int thumbnail;
    /// Nonzero: libheif converts every decoded tile to RGB whole, as it does by default (the reference the
    /// conversion here, of only the region's pixels of a 4:2:0 image, is tested against).
    int libheif_conversion;
    /// Polled between tiles (and by libheif where it can): nonzero stops the decode with CHEIF_CANCELLED.
    const int *cancel;
    /// A grid's tiles on more threads than the caller's: up to `extra_threads` more, each taking a core of
    /// `cores` for every tile it decodes and stopping when none is free (NULL or 0: the caller's thread decodes
    /// every tile). At most `cheif_tiles_held(extra_threads)` tiles are decoded and not yet copied at once.
    cheif_cores *cores;
    int extra_threads;
} cheif_region_request;

typedef struct {
    /// `width × height × bands` samples (the request's, shrunk), row by row, interleaved; 1 byte each, or 2 (native
    /// 16-bit) when `sixteen_bit`. malloc'd, owned by the caller (free()). NULL unless CHEIF_OK.
    void *pixels;
    size_t length;
    int width;
    int height;
    /// 3 (RGB) or 4 (RGBA).
    int bands;
    int sixteen_bit;
    /// Tiles decoded, and of those the ones converted to RGB here (from 4:2:0 planes; libheif converted
    /// the others).
    int tiles;
    int converted_tiles;
    /// Threads that decoded tiles: the caller's and the extra ones that got a core. A non-grid image: 1, or for AV1
    /// the CPUs dav1d was given (its render's core, and an extra one when free: CHEIFCoresPinning.h).
    int threads;
    char message[CHEIF_MESSAGE_LENGTH];
} cheif_region_result;

cheif_status cheif_decode_region(cheif_file *file, const cheif_region_request *request, cheif_region_result *result);

/// The most grid tiles one decode holds decoded and not yet copied with `extra_threads` extra threads: each thread's
/// tile, and as many waiting their turn to be copied in order.
int cheif_tiles_held(int extra_threads);

// MARK: Decode cores

/// The cores every decode of a worker's processes shares (CHEIFCores.c): one byte-range lock per core on a
/// memory file the processes hold in common, released by the kernel when its holder ends. A render holds one
/// for its whole run (`cheif_cores_take`); extra tile threads take one per tile, only while no render waits.
/// Thread-safe.

/// A new memory file for the cores (close-on-exec): its descriptor, or -errno.
int cheif_cores_create(void);

/// The process's handle on `count` cores of the memory file `descriptor` (which it must keep open, and never
/// close elsewhere while the handle lives: closing any descriptor of the file drops the process's locks).
/// NULL when out of memory, `descriptor` is not open or `count` < 1.
cheif_cores *cheif_cores_open(int descriptor, int count);

/// Gives back every core the process holds and frees the handle (the descriptor stays open).
void cheif_cores_close(cheif_cores *cores);

/// A render's core: the first free one, else waits up to `wait_milliseconds` (ringing the doorbell so extra
/// threads stop taking cores). The core's number, or -1 when none came.
int cheif_cores_take(cheif_cores *cores, int wait_milliseconds);

/// An extra thread's core for one tile: a free one if no render waits for a core, else -1. Never waits.
int cheif_cores_take_extra(cheif_cores *cores);

void cheif_cores_give(cheif_cores *cores, int core);

/// Starts libheif and loads its decoder and encoder plugins from their directory (heif_init), which libheif would
/// otherwise do at its first use: a render helper calls it in its warm-up, before its lockdown refuses every path.
/// Returns 0, or libheif's error code.
int cheif_load_plugins(void);

/// libheif's version, e.g. "1.19.7", and as a number (0xMMmmpp00).
const char *cheif_library_version(void);
uint32_t cheif_library_version_number(void);
