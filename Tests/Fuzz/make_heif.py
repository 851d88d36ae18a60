#!/usr/bin/env python3
"""Writes small HEIF files for the fuzz seeds and the crafted fixtures (Tests/Fuzz/README.md).

The system's libheif has no HEVC encoder, so this drives the libheif (with x265) that pillow-heif bundles
in the tools venv (`.deps/venv`, scripts/dev/install-deps.sh), through libheif's public C API. The seeds are
grids of 64 × 64 tiles (x265's smallest: libheif pads a smaller tile to it, and the decoded tile then no
longer has the grid's tile size) and single images, in every orientation (irot/imir written by libheif
from an EXIF-style orientation), 8 and 10 bits, with and without alpha, one with a thumbnail: the HEIF
harness decodes each in about a millisecond.

    make_heif.py seeds DIR      the HEIF harness's generated seeds (written by scripts/fuzz.sh)
    make_heif.py bad-tile FILE  a 2 × 2 grid of 256 × 256 tiles (480 × 400: above the smallest accepted
                                photo), 8-bit 4:2:0, whose last tile item's type is changed from `hvc1`
                                to `hvcX`: a grid whose tile is not an image (docs/UPSTREAM-BUGS.md)
    make_heif.py grid FILE      an 8 × 6 grid of 64 × 64 tiles (500 × 380: the last column and row cut), 8-bit
                                4:2:0: the fixture of the tile decode on several threads

Deterministic for one pillow-heif version: x265 runs with one thread and fixed settings.
"""
import ctypes
import glob
import os
import sys


class HeifError(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("subcode", ctypes.c_int), ("message", ctypes.c_char_p)]


def load():
    import pillow_heif  # noqa: F401  (its package holds the bundled libraries)

    root = os.path.dirname(os.path.dirname(pillow_heif.__file__))
    paths = glob.glob(os.path.join(root, "pillow_heif.libs", "libheif-*.so*"))
    if not paths:
        sys.exit("make_heif.py: pillow-heif's bundled libheif was not found")
    lib = ctypes.CDLL(paths[0])
    p = ctypes.c_void_p
    u32 = ctypes.c_uint32
    signatures = {
        "heif_context_alloc": ([], p),
        "heif_context_free": ([p], None),
        "heif_context_get_encoder_for_format": ([p, ctypes.c_int, ctypes.POINTER(p)], HeifError),
        "heif_encoder_set_lossy_quality": ([p, ctypes.c_int], HeifError),
        "heif_encoder_set_parameter": ([p, ctypes.c_char_p, ctypes.c_char_p], HeifError),
        "heif_encoder_release": ([p], None),
        "heif_encoding_options_alloc": ([], p),
        "heif_encoding_options_free": ([p], None),
        "heif_image_create": ([ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.POINTER(p)], HeifError),
        "heif_image_add_plane": ([p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int], HeifError),
        "heif_image_get_plane": ([p, ctypes.c_int, ctypes.POINTER(ctypes.c_int)], ctypes.POINTER(ctypes.c_uint8)),
        "heif_image_release": ([p], None),
        "heif_context_encode_image": ([p, p, p, p, ctypes.POINTER(p)], HeifError),
        "heif_context_encode_thumbnail": ([p, p, p, p, p, ctypes.c_int, ctypes.POINTER(p)], HeifError),
        "heif_context_add_grid_image": ([p, u32, u32, u32, u32, p, ctypes.POINTER(p)], HeifError),
        "heif_context_add_image_tile": ([p, p, u32, u32, p, p], HeifError),
        "heif_context_set_primary_image": ([p, p], HeifError),
        "heif_image_handle_release": ([p], None),
        "heif_context_write_to_file": ([p, ctypes.c_char_p], HeifError),
        "heif_nclx_color_profile_alloc": ([], p),
        "heif_nclx_color_profile_free": ([p], None),
        "heif_image_set_nclx_color_profile": ([p, p], HeifError),
    }
    for name, (args, result) in signatures.items():
        function = getattr(lib, name)
        function.argtypes = args
        function.restype = result
    return lib


LIB = None


def check(error, what):
    if error.code != 0:
        sys.exit(f"make_heif.py: {what}: {error.message.decode(errors='replace')}")


def nclx(primaries, transfer, matrix, full_range):
    """An nclx colour profile (struct heif_color_profile_nclx: version, three enums, the range flag)."""
    profile = LIB.heif_nclx_color_profile_alloc()
    for offset, value in ((4, primaries), (8, transfer), (12, matrix)):
        ctypes.c_int.from_address(profile + offset).value = value
    ctypes.c_uint8.from_address(profile + 16).value = full_range
    return profile


def image(width, height, bits, alpha, seed, colour=None):
    """An RGB(A) test pattern: gradients, a diagonal edge and a little texture, so chroma and edges exist. `colour`:
    (primaries, transfer, matrix, full range) of an nclx profile the encoder converts with and writes."""
    chroma = {(8, False): 10, (8, True): 11, (10, False): 14, (10, True): 15}[(bits, alpha)]
    handle = ctypes.c_void_p()
    check(LIB.heif_image_create(width, height, 1, chroma, ctypes.byref(handle)), "image_create")
    check(LIB.heif_image_add_plane(handle, 10, width, height, bits), "add_plane")
    stride = ctypes.c_int()
    plane = LIB.heif_image_get_plane(handle, 10, ctypes.byref(stride))
    bands = 4 if alpha else 3
    top = (1 << bits) - 1
    for y in range(height):
        for x in range(width):
            values = [
                (x * 4 + seed * 37) % (top + 1),
                (y * 4 + seed * 59) % (top + 1),
                top if (x + y + seed) % 16 < 8 else top // 3,
                (x * y + seed) % (top + 1),
            ][:bands]
            for band, value in enumerate(values):
                if bits == 8:
                    plane[y * stride.value + x * bands + band] = value
                else:
                    at = y * stride.value + (x * bands + band) * 2
                    plane[at] = value & 0xFF
                    plane[at + 1] = value >> 8
    if colour:
        profile = nclx(*colour)
        check(LIB.heif_image_set_nclx_color_profile(handle, profile), "set_nclx_color_profile")
        LIB.heif_nclx_color_profile_free(profile)
    return handle


class Writer:
    def __init__(self, orientation=1):
        self.context = LIB.heif_context_alloc()
        self.encoder = ctypes.c_void_p()
        check(LIB.heif_context_get_encoder_for_format(self.context, 1, ctypes.byref(self.encoder)), "encoder")
        check(LIB.heif_encoder_set_lossy_quality(self.encoder, 30), "quality")
        for name, value in ((b"preset", b"ultrafast"), (b"x265:pools", b"none"), (b"x265:frame-threads", b"1")):
            LIB.heif_encoder_set_parameter(self.encoder, name, value)  # best effort: names vary by version
        self.options = LIB.heif_encoding_options_alloc()
        # heif_encoding_options v5+: `image_orientation` (an int) follows the nclx pointer and one byte.
        ctypes.c_int.from_address(self.options + 20).value = orientation

    def single(self, width, height, bits=8, alpha=False, thumbnail=0, colour=None):
        picture = image(width, height, bits, alpha, 1, colour)
        handle = ctypes.c_void_p()
        check(LIB.heif_context_encode_image(self.context, picture, self.encoder, self.options, ctypes.byref(handle)),
              "encode_image")
        if thumbnail:
            small = ctypes.c_void_p()
            check(LIB.heif_context_encode_thumbnail(self.context, picture, handle, self.encoder, self.options,
                                                    thumbnail, ctypes.byref(small)), "encode_thumbnail")
            LIB.heif_image_handle_release(small)
        LIB.heif_image_handle_release(handle)
        LIB.heif_image_release(picture)

    def grid(self, width, height, columns, rows, tile, bits=8, alpha=False, colour=None):
        handle = ctypes.c_void_p()
        check(LIB.heif_context_add_grid_image(self.context, width, height, columns, rows, self.options,
                                              ctypes.byref(handle)), "add_grid_image")
        for row in range(rows):
            for column in range(columns):
                picture = image(tile, tile, bits, alpha, row * columns + column, colour)
                check(LIB.heif_context_add_image_tile(self.context, handle, column, row, picture, self.encoder),
                      "add_image_tile")
                LIB.heif_image_release(picture)
        check(LIB.heif_context_set_primary_image(self.context, handle), "set_primary_image")
        LIB.heif_image_handle_release(handle)

    def write(self, path):
        check(LIB.heif_context_write_to_file(self.context, path.encode()), "write")
        LIB.heif_encoding_options_free(self.options)
        LIB.heif_encoder_release(self.encoder)
        LIB.heif_context_free(self.context)


def bad_tile(path, tile=256):
    """The grid above (or one of smaller tiles), with the `infe` of its last tile item typed `hvcX`: libheif keeps the item but not
    as an image, so the grid references a tile that is not a proper image."""
    writer = Writer()
    writer.grid(480 * tile // 256, 400 * tile // 256, 2, 2, tile)
    writer.write(path)
    data = bytearray(open(path, "rb").read())
    infe = [i for i in range(len(data) - 20) if data[i:i + 4] == b"infe" and data[i + 12:i + 16] == b"hvc1"]
    if len(infe) < 4:
        sys.exit("make_heif.py: the grid has fewer than four hvc1 items")
    data[infe[-1] + 12:infe[-1] + 16] = b"hvcX"
    open(path, "wb").write(bytes(data))


def grid(path):
    writer = Writer()
    writer.grid(500, 380, 8, 6, 64)
    writer.write(path)


def seeds(directory):
    os.makedirs(directory, exist_ok=True)
    for orientation in range(1, 9):
        writer = Writer(orientation)
        writer.grid(100 if orientation % 2 else 128, 80 if orientation % 2 else 66, 2, 2, 64)
        writer.write(os.path.join(directory, f"grid-2x2_o{orientation}.heic"))
    for name, arguments in {
        "grid-3x2_10bit": dict(width=150, height=100, columns=3, rows=2, tile=64, bits=10),
        "grid-2x2_alpha": dict(width=120, height=90, columns=2, rows=2, tile=64, alpha=True),
        "grid-2x1_10bit-alpha": dict(width=100, height=40, columns=2, rows=1, tile=64, bits=10, alpha=True),
        # Grid geometry: the last column and row only partly inside the image, one row, one column.
        "grid-3x3_edges": dict(width=130, height=190, columns=3, rows=3, tile=64),
        "grid-4x1": dict(width=250, height=64, columns=4, rows=1, tile=64),
        "grid-1x3": dict(width=64, height=150, columns=1, rows=3, tile=64),
        # Tiles encoded as BT.709 limited range (libheif's API writes no colr on the grid item itself: the nclx
        # seeds with a colour box are the single images below).
        "grid-2x2_tiles-bt709-limited": dict(width=100, height=80, columns=2, rows=2, tile=64, colour=(1, 1, 1, 0)),
    }.items():
        writer = Writer()
        writer.grid(**arguments)
        writer.write(os.path.join(directory, f"{name}.heic"))
    for name, (orientation, arguments) in {
        "single_8bit_o1": (1, dict(width=48, height=40)),
        "single_8bit_o6": (6, dict(width=40, height=48)),
        "single_10bit_o3": (3, dict(width=33, height=17, bits=10)),
        "single_alpha_o8": (8, dict(width=30, height=30, alpha=True)),
        "single_thumbnail": (1, dict(width=64, height=64, thumbnail=16)),
        # nclx boxes: P3 primaries with BT.601 full range (our conversion), BT.2020 limited range (libheif's).
        "single_nclx-p3_o6": (6, dict(width=40, height=32, colour=(12, 13, 6, 1))),
        "single_nclx-bt2020-10bit": (1, dict(width=36, height=28, bits=10, colour=(9, 16, 9, 0))),
    }.items():
        writer = Writer(orientation)
        writer.single(**arguments)
        writer.write(os.path.join(directory, f"{name}.heic"))
    bad_tile(os.path.join(directory, "grid_tile-not-an-image.heic"), tile=64)


def main():
    global LIB
    if len(sys.argv) != 3 or sys.argv[1] not in ("seeds", "bad-tile", "grid"):
        sys.exit(__doc__)
    LIB = load()
    {"seeds": seeds, "bad-tile": bad_tile, "grid": grid}[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
