#!/usr/bin/env python3
"""Writes the JPEG harness's small seeds (Tests/Fuzz/README.md): one per path of the JPEG region decoder
(4:2:0, 4:2:2, 4:4:4, grey, RGB without the YCbCr transform, CMYK, progressive, ICC, EXIF).

    make_jpeg.py DIR

Pillow (tools venv) writes them from a test pattern; jpegtran (libjpeg-turbo-progs), when installed,
adds restart intervals and arithmetic coding. Small sizes that are not multiples of the iMCU, so the
edge handling of every scale runs; each file a few hundred bytes to a few KB.
"""
import io
import os
import shutil
import subprocess
import sys

from PIL import Image


def pattern(mode, width, height):
    image = Image.new("RGB", (width, height))
    image.putdata([((x * 7) % 256, (y * 5) % 256, ((x ^ y) * 3) % 256) for y in range(height) for x in range(width)])
    return image.convert(mode)


def exif(orientation):
    data = Image.Exif()
    data[0x0112] = orientation
    return data.tobytes()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    icc = None
    try:
        from PIL import ImageCms

        icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    except ImportError:
        pass
    seeds = {
        "ycbcr420_67x45.jpg": ("RGB", 67, 45, dict(subsampling=2, quality=60)),
        "ycbcr422_40x33.jpg": ("RGB", 40, 33, dict(subsampling=1, quality=60)),
        "ycbcr444_33x17.jpg": ("RGB", 33, 17, dict(subsampling=0, quality=60)),
        "grey_31x29.jpg": ("L", 31, 29, dict(quality=60)),
        "rgb_35x21.jpg": ("RGB", 35, 21, dict(keep_rgb=True, quality=60)),
        "cmyk_24x16.jpg": ("CMYK", 24, 16, dict(quality=60)),
        "progressive_40x40.jpg": ("RGB", 40, 40, dict(progressive=True, quality=60)),
        "exif-orientation-6_48x32.jpg": ("RGB", 48, 32, dict(exif=exif(6), quality=60)),
        "tiny_1x1.jpg": ("RGB", 1, 1, dict(quality=60)),
    }
    if icc:
        seeds["icc_32x24.jpg"] = ("RGB", 32, 24, dict(icc_profile=icc, quality=60))
    for name, (mode, width, height, options) in seeds.items():
        pattern(mode, width, height).save(os.path.join(directory, name), "JPEG", **options)
    jpegtran = shutil.which("jpegtran")
    if jpegtran:
        source = os.path.join(directory, "ycbcr420_67x45.jpg")
        for name, flags in {"restart-1_67x45.jpg": ["-restart", "1"], "arithmetic_67x45.jpg": ["-arithmetic"]}.items():
            output = subprocess.run([jpegtran, *flags, source], check=True, capture_output=True).stdout
            open(os.path.join(directory, name), "wb").write(output)


if __name__ == "__main__":
    main()
