"""The uploads: photos the worker renders, hostile files it must refuse, attacks on the render helper (test-only
markers) and mutations of real photos and the fuzz harnesses' inputs."""
import gzip
import os
import random
import struct
import sys
import zlib

from . import root
from .stack import log, s3

# Uploads that attack the render helper (RenderTestSeams markers), each with the code its job must end with: a
# crash is DECODE_FAILED on the first render (the worker lives on), a hang is killed at the deadline, an
# allocation past the helper's memory cap is OUT_OF_MEMORY.
CONTAINED = {
    "crash-abort.jpg": (b"AVATAR-TEST-ABORT", "DECODE_FAILED"),
    "crash-segv.jpg": (b"AVATAR-TEST-SIGNAL=SEGV", "DECODE_FAILED"),
    "crash-kill.jpg": (b"AVATAR-TEST-SIGNAL=KILL", "DECODE_FAILED"),
    "hang.jpg": (b"AVATAR-TEST-SLEEP-MS=120000", "TIMEOUT"),
    "memory-bomb.jpg": (b"AVATAR-TEST-ALLOCATE-MB=16384", "OUT_OF_MEMORY"),
    # Refused inside GLib, whose own answer is to abort: still out of memory, not a crash.
    "memory-bomb-glib.jpg": (b"AVATAR-TEST-GLIB-ALLOCATE-MB=16384", "OUT_OF_MEMORY"),
    # A helper taken over by its upload answers with a forged reply (RenderHelpers' ForgedReply): the worker refuses
    # it, kills the helper and fails the job, never itself.
    "forged-huge-rendition.jpg": (b"AVATAR-TEST-FORGE=huge-rendition", "DECODE_FAILED"),
    "forged-max-estimate.jpg": (b"AVATAR-TEST-FORGE=max-estimate", "DECODE_FAILED"),
    "forged-garbage.jpg": (b"AVATAR-TEST-FORGE=garbage", "DECODE_FAILED"),
}
# Mutations of real photos sent once each (sandboxed-render issue: 600 such mutations once killed the worker).
MUTATIONS = 48
# Fuzz corpus inputs (after `make fuzz`) sent once each, beside the regression inputs.
FUZZ_CORPUS_SAMPLE = 24
# The fuzz harnesses' inputs start with this many bytes of crop parameters (Tests/Fuzz/fuzz_parameters.h).
FUZZ_PARAMETER_BYTES = 8
# A mutation's file may hang its decoder or exhaust its memory cap: those codes are its own, not a fault's.
MUTATED_OWN_TRANSIENT = {"TIMEOUT", "OUT_OF_MEMORY"}
# The attack that hangs its render until the deadline (sent apart from the others).
HANG = "hang.jpg"


def make_sources(work):
    """Returns {name: (bytes, kind, expected codes or None)}: photos the worker renders, and hostile files it must
    refuse with a permanent code."""
    import pyvips

    def photo(width, height, seed, fmt, **save):
        noise = pyvips.Image.gaussnoise(width // 8, height // 8, sigma=40, mean=128, seed=seed)
        rgb = noise.bandjoin([noise.rot180().resize(1.0), noise.flip("horizontal")]).cast("uchar")
        image = rgb.resize(8, kernel="linear").copy(interpretation="srgb")
        return image, image.write_to_buffer(fmt, **save)

    sources = {}
    _, sources["landscape.jpg"] = photo(1600, 1200, 1, ".jpg", Q=85)
    portrait, _ = photo(1600, 1200, 2, ".jpg")
    portrait = portrait.copy()
    portrait.set_type(pyvips.GValue.gint_type, "orientation", 6)
    sources["portrait-exif6.jpg"] = portrait.write_to_buffer(".jpg", Q=85)
    alpha, _ = photo(960, 960, 3, ".png")
    sources["alpha.png"] = alpha.bandjoin(255).copy(interpretation="srgb").write_to_buffer(".png", compression=1)
    _, sources["square.webp"] = photo(1024, 1024, 4, ".webp", Q=80)
    _, sources["phone.jpg"] = photo(2016, 1512, 5, ".jpg", Q=85)
    kinds = {name: ("photo", None) for name in sources}

    def hostile(name, data, *codes):
        sources[name] = data
        kinds[name] = ("hostile", set(codes))

    _, small = photo(320, 240, 6, ".jpg")
    hostile("too-small.jpg", small, "TOO_SMALL")
    hostile("truncated.jpg", sources["phone.jpg"][: len(sources["phone.jpg"]) // 3], "DECODE_FAILED")
    hostile("zero-byte.jpg", b"", "UNSUPPORTED_FORMAT", "DECODE_FAILED")
    hostile("html-404.jpg", b"<!doctype html><html><body>404 Not Found</body></html>\n", "UNSUPPORTED_FORMAT")
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="4000" height="4000">' + b"<rect/>" * 4000 + b"</svg>"
    hostile("truncated.svgz", gzip.compress(svg)[:185], "UNSUPPORTED_FORMAT")
    hostile("header-bomb.png", png_header_bomb(60000, 60000), "TOO_MANY_PIXELS")
    # Over image.max-mb (chaos.sh sets 8): refused from the object's size, never downloaded.
    hostile("oversized.jpg", b"\xff\xd8\xff\xe0" + os.urandom(9 * 1024 * 1024), "TOO_LARGE")
    fixtures = os.path.join(root, "Tests", "Fixtures", "hostile")
    if os.path.isdir(fixtures):
        for name in sorted(os.listdir(fixtures)):
            if not name.endswith(".md"):
                sources["fixture-" + name] = open(os.path.join(fixtures, name), "rb").read()
                kinds["fixture-" + name] = ("hostile", None)
    # Real photos whose bytes carry a marker the render helper's test-only seams act on.
    for name, (marker, code) in CONTAINED.items():
        sources[name] = sources["landscape.jpg"] + marker
        kinds[name] = ("contained", {code})
    for name, data in mutated_sources(sources).items():
        sources[name] = data
        kinds[name] = ("mutated", None)
    return {name: (data,) + kinds[name] for name, data in sources.items()}


def mutate(rng, data):
    """One plain mutation of a photo, as a careless or hostile uploader makes: bytes flipped, a 32-bit field
    (an ISOBMFF box size, an item's extent, a JPEG length) overwritten with an extreme value, or the file cut."""
    data = bytearray(data)
    roll = rng.random()
    if roll < 0.4:
        for _ in range(rng.randrange(1, 9)):
            index = rng.randrange(len(data))
            data[index] ^= 1 << rng.randrange(8)
    elif roll < 0.8:
        # Most of a HEIC's structure sits in its first few KiB (ftyp, meta, iinf, iloc, ipma, grid).
        index = rng.randrange(min(len(data) - 4, 4096))
        data[index:index + 4] = struct.pack(">I", rng.choice([0, 1, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF,
                                                              rng.getrandbits(32)]))
    else:
        del data[rng.randrange(len(data) // 8, len(data)):]
    return bytes(data)


def mutated_sources(sources):
    """{name: bytes}: MUTATIONS mutations of real photos, the fuzz regression inputs and a sample of the fuzz
    corpus (their parameter prefix removed: the rest is the file)."""
    rng = random.Random(1803)
    originals = [sources["landscape.jpg"], open(os.path.join(root, "Tests", "Fixtures", "formats",
                                                             "heic_iphone-7-plus_1008x756.heic"), "rb").read()]
    corpus = os.environ.get("AVATAR_TEST_CORPUS") or os.path.join(root, "..", "shared", "corpus")
    ios18 = os.path.join(corpus, "formats", "heic_iphone-ios18_tmap-gainmap_4284x5712.heic")
    if os.path.isfile(ios18):
        originals.append(open(ios18, "rb").read())
    mutated = {f"mutated-{index:02}": mutate(rng, originals[index % len(originals)]) for index in range(MUTATIONS)}
    fuzz = []
    for harness in ("jpeg", "heif"):
        for folder, limit in ((os.path.join(root, "Tests", "Fixtures", "fuzz-regressions", harness), None),
                              (os.path.join(root, ".build-fuzz", "corpus", harness), FUZZ_CORPUS_SAMPLE // 2)):
            names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
            names = names if limit is None else rng.sample(names, min(limit, len(names)))
            fuzz += [(harness, os.path.join(folder, name)) for name in names]
    for index, (harness, path) in enumerate(fuzz):
        data = open(path, "rb").read()[FUZZ_PARAMETER_BYTES:]
        if data:
            mutated[f"fuzz-{harness}-{index:02}"] = data
    return mutated


def png_header_bomb(width, height):
    """A PNG whose header declares width × height 8-bit grey pixels and whose data is a few bytes."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def upload(env, work):
    """Makes the sources and uploads each under uploads/chaos/; returns them as make_sources does."""
    log("making and uploading the source photos")
    sources = make_sources(work)
    for name, (data, _, _) in sources.items():
        status = s3(env, "PUT", "uploads/chaos/" + name, data)
        if status != 200:
            sys.exit(f"chaos: uploading {name} failed with HTTP {status}")
    return sources
