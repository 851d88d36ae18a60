#!/usr/bin/env python3
"""Generates the large phone-size benchmark inputs once (pyvips), from corpus photos.

  gen_inputs.py CORPUS_DIR OUT_DIR [HEIF_IMAGE...]

Writes, if missing (the corpus ones only when CORPUS_DIR exists):
  gen_12mp_p3_4032x3024.jpg        12 MP landscape, Display P3 ICC (pixels reinterpreted as P3)
  gen_24mp_exif6_6000x4000.jpg     24 MP stored 6000x4000 landscape with EXIF Orientation=6
                                   (displays as a 4000x6000 portrait), sRGB ICC
  gen_48mp_8064x6048.jpg           48 MP landscape, no ICC
  gen_20mp_10bit_5472x3648.avif    20 MP landscape AVIF, 10-bit 4:2:0 (avifenc, aom; no ICC: nclx)
  jpeg-twin_NAME.jpg               for each HEIF_IMAGE: the same pixels (libheif's decode, upright, 8-bit)
                                   saved as a baseline JPEG, q90 4:2:0, with the same ICC profile: what our
                                   renderer takes for the same photo as a JPEG (driver.py twin_name)

Photo-like content: a corpus photo cropped to 4:3 / 3:2, upscaled (lanczos3), with mild
sensor-like noise so the JPEG has a phone's entropy (a few bytes per pixel is typical
at q90), then saved at JPEG q90 with 4:2:0 chroma subsampling like a phone camera.
"""
import os
import subprocess
import sys
import tempfile

import pyvips

AVIF_10BIT = "gen_20mp_10bit_5472x3648.avif"


def twin_name(image):
    """The cache file name of a HEIF image's baseline-JPEG twin."""
    return "jpeg-twin_" + os.path.splitext(os.path.basename(image))[0] + ".jpg"


def jpeg_twin(image, path):
    img = pyvips.Image.new_from_file(image)
    if img.format == "ushort":  # 10/12-bit HEIF: libvips widens it to 16 bits
        img = (img >> 8).cast("uchar")
    icc = img.get("icc-profile-data") if img.get_typeof("icc-profile-data") else None
    img = img.copy(interpretation="srgb")
    for name in img.get_fields():
        if name in ("icc-profile-data", "exif-data", "xmp-data", "iptc-data", "orientation") \
                or name.startswith("exif-") or name.startswith("heif-"):
            img.remove(name)
    save(img, path, icc=icc)


def avif_10bit(corpus, path):
    img = photo(corpus, "camera/pd_craft-beer_24mp_progressive.jpg", 5472, 3648)
    with tempfile.TemporaryDirectory() as tmp:
        png = os.path.join(tmp, "source.png")
        img.pngsave(png, compression=1)
        subprocess.run(["avifenc", "--depth", "10", "--yuv", "420", "--min", "18", "--max", "30", "--speed", "8",
                        "--jobs", "all", png, path + ".tmp.avif"], check=True, stdout=subprocess.DEVNULL)
    os.replace(path + ".tmp.avif", path)


def photo(corpus, rel, width, height, noise_sigma=5.0):
    src = pyvips.Image.new_from_file(os.path.join(corpus, rel), access="sequential").autorot()
    # Cover-crop the source to the target aspect ratio, then upscale.
    target = width / height
    if src.width / src.height > target:
        w = int(round(src.height * target))
        src = src.crop((src.width - w) // 2, 0, w, src.height)
    else:
        h = int(round(src.width / target))
        src = src.crop(0, (src.height - h) // 2, src.width, h)
    img = src.resize(width / src.width, vscale=height / src.height, kernel="lanczos3")
    img = img.extract_band(0, n=3) if img.bands > 3 else img
    noise = pyvips.Image.gaussnoise(width, height, sigma=noise_sigma, mean=0)
    img = (img.cast("float") + noise.bandjoin([noise, noise])).cast("uchar")
    img = img.copy(interpretation="srgb")
    # Start from clean metadata: only what we set below goes into the file.
    for name in img.get_fields():
        if name in ("icc-profile-data", "exif-data", "xmp-data", "iptc-data", "orientation") \
                or name.startswith("exif-"):
            img.remove(name)
    return img


def save(img, path, icc=None, orientation=None):
    img = img.copy()
    if icc is not None:
        img.set_type(pyvips.GValue.blob_type, "icc-profile-data", icc)
    if orientation is not None:
        img.set_type(pyvips.GValue.gint_type, "orientation", orientation)
    tmp = path + ".tmp.jpg"
    img.jpegsave(tmp, Q=90, subsample_mode="on", optimize_coding=True)
    os.replace(tmp, path)


def main():
    corpus, out, heif_images = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    if os.path.isdir(corpus):
        generate_from_corpus(corpus, out)
        path = os.path.join(out, AVIF_10BIT)
        if not os.path.exists(path):
            print(f"bench: generating {AVIF_10BIT} (avifenc, 10-bit)", flush=True)
            avif_10bit(corpus, path)
    make_twins(heif_images, out)


def make_twins(heif_images, out):
    os.makedirs(out, exist_ok=True)
    for image in heif_images:
        path = os.path.join(out, twin_name(image))
        if os.path.exists(image) and not os.path.exists(path):
            print(f"bench: generating {twin_name(image)}", flush=True)
            jpeg_twin(image, path)


def generate_from_corpus(corpus, out):
    p3 = pyvips.Image.new_from_file(os.path.join(corpus, "colour/p3_displayp3-v4_craft-beer.jpg")) \
        .get("icc-profile-data")
    srgb = pyvips.Image.new_from_file(os.path.join(corpus, "camera/pd_craft-beer_24mp_progressive.jpg")) \
        .get("icc-profile-data")
    jobs = [
        ("gen_12mp_p3_4032x3024.jpg", "camera/dslr_nikon-d3100_14mp_big-exif.jpg", 4032, 3024, p3, None),
        ("gen_24mp_exif6_6000x4000.jpg", "camera/phone_iphone-4s_8mp_orientation-6.jpg", 6000, 4000, srgb, 6),
        ("gen_48mp_8064x6048.jpg", "camera/phone_samsung-galaxy-s7-edge_12mp_gps.jpg", 8064, 6048, None, None),
    ]
    for name, rel, w, h, icc, orientation in jobs:
        path = os.path.join(out, name)
        if os.path.exists(path):
            continue
        print(f"bench: generating {name} from {rel}", flush=True)
        # The iPhone 4S source is itself an EXIF-6 portrait: autorot() made it upright, so turn the
        # upright picture back into stored landscape pixels for Orientation=6 (rotate 90° anticlockwise).
        if orientation == 6:
            img = photo(corpus, rel, h, w).rot270()
        else:
            img = photo(corpus, rel, w, h)
        save(img, path, icc=icc, orientation=orientation)


if __name__ == "__main__":
    main()
