#!/usr/bin/env python3
"""The straightforward pyvips pipeline the Swift renderer is compared with.

Random access, autorotate (decodes the whole image and rotates all of it), crop the oriented
square, ICC to sRGB (when the file has a profile), lanczos3 resize to the output size, PNG
without metadata. The operation cache is off, as in the worker, so every render decodes.

  VIPS_CONCURRENCY=1 reference_pyvips.py --job JOB.json
"""
import argparse

import pyvips

import benchlib


def render(data, x, y, side, size):
    img = pyvips.Image.new_from_buffer(data, "", access="random")
    img = img.autorot()
    img = img.crop(x, y, side, side)
    if img.get_typeof("icc-profile-data") != 0:
        img = img.icc_transform("srgb", embedded=True, intent="perceptual")
    img = img.resize(size / side, kernel="lanczos3")
    return img.pngsave_buffer(strip=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--job", required=True)
    parser.add_argument("--save", help="write each pose's last output as DIR/POSE.IMPL.png")
    args = parser.parse_args()
    pyvips.cache_set_max(0)
    benchlib.run("pyvips", render, args.job, args.save)


if __name__ == "__main__":
    main()
