#!/usr/bin/env python3
"""The informed pyvips pipeline: what a careful libvips user writes for a crop of a large JPEG.

Shrink-on-load (`shrink=` on the JPEG/WebP loader: the largest of 8, 4, 2, 1 that keeps the crop
>= the output size, the factor our ShrinkOnLoad picks), crop the square in the shrunk STORED image
(the oriented rectangle mapped back through the EXIF orientation, so only the square is rotated),
ICC to sRGB (when the file has a profile), lanczos3 resize to the output size, rotate the square,
PNG at our level and row filter (RenditionEncoder.pngLevel, pngFilter) without metadata. Sequential
access does not fit a crop anywhere in the image, so access is random as in the straightforward one.
The operation cache is off, as in the worker, so every render decodes.

  VIPS_CONCURRENCY=1 reference_pyvips_informed.py --job JOB.json
"""
import argparse

import pyvips

import benchlib

# RenditionEncoder.pngLevel and pngFilter: the same deflate level and row filter, through libvips' pngsave
# (libpng + zlib). Measured on a 512 px avatar: filter "avg" costs what "none" does, and is 12 % smaller.
PNG_COMPRESSION = 1
PNG_FILTER = "avg"
FACTORS = (8, 4, 2, 1)


def stored_rect(orientation, x, y, side, width, height):
    """The oriented square (x, y, side) in stored pixels; width x height is the STORED size."""
    if orientation in (5, 6, 7, 8):
        ow, oh = height, width
    else:
        ow, oh = width, height
    # Where the oriented square's top-left and bottom-right corners come from in stored pixels.
    def back(px, py):
        return {1: (px, py), 2: (ow - px, py), 3: (ow - px, oh - py), 4: (px, oh - py),
                5: (py, px), 6: (py, ow - px), 7: (oh - py, ow - px), 8: (oh - py, px)}[orientation]
    ax, ay = back(x, y)
    bx, by = back(x + side, y + side)
    return min(ax, bx), min(ay, by), side


def rotate_square(img, orientation):
    """What autorot does to the whole image, done to the square."""
    if orientation in (2, 4, 5, 7):
        img = img.fliphor()
    turn = {1: None, 2: None, 3: "d180", 4: "d180", 5: "d270", 6: "d90", 7: "d90", 8: "d270"}[orientation]
    return img.rot(turn) if turn else img


def render(data, x, y, side, size):
    probe = pyvips.Image.new_from_buffer(data, "")
    loader = probe.get("vips-loader")
    orientation = probe.get("orientation") if probe.get_typeof("orientation") != 0 else 1
    orientation = orientation if 1 <= orientation <= 8 else 1
    sx, sy, side = stored_rect(orientation, x, y, side, probe.width, probe.height)
    shrink = 1
    if loader.startswith("jpegload") or loader.startswith("webpload"):
        shrink = next(f for f in FACTORS if side / f >= size or f == 1)
    if shrink > 1:
        img = pyvips.Image.new_from_buffer(data, "", access="random", shrink=shrink)
    else:
        img = pyvips.Image.new_from_buffer(data, "", access="random")
    left, top = sx // shrink, sy // shrink
    s = min(side // shrink, img.width - left, img.height - top)
    img = img.crop(left, top, s, s)
    if img.get_typeof("icc-profile-data") != 0:
        img = img.icc_transform("srgb", embedded=True, intent="perceptual")
    img = img.resize(size / s, kernel="lanczos3")
    if img.width != size or img.height != size:
        img = img.crop(0, 0, min(size, img.width), min(size, img.height))
    img = rotate_square(img, orientation)
    if img.format == "ushort":  # a 10/12-bit HEIF without a profile: our avatar is 8-bit
        img = img.colourspace("srgb")
    return img.pngsave_buffer(strip=True, compression=PNG_COMPRESSION, filter=PNG_FILTER)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--job", required=True)
    parser.add_argument("--save", help="write each pose's last output as DIR/POSE.IMPL.png")
    args = parser.parse_args()
    pyvips.cache_set_max(0)
    benchlib.run("pyvips-informed", render, args.job, args.save)


if __name__ == "__main__":
    main()
