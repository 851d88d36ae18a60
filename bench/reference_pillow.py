#!/usr/bin/env python3
"""The Pillow pipeline the Swift renderer is compared with.

HEIC through pillow-heif (its wheel's own libheif, which applies irot/imir, so the EXIF transpose is a
no-op there); AVIF through Pillow's own plug-in (libavif).

JPEG draft mode (the DCT-domain shrink: the largest 1/2, 1/4, 1/8 reduction that keeps the
crop >= the output size), EXIF transpose of the (drafted) image, crop the oriented square,
ICC to sRGB when the file has a profile, LANCZOS resize, PNG.

  reference_pillow.py --job JOB.json
"""
import argparse
import io
import math

import pillow_heif
from PIL import Image, ImageCms, ImageOps

import benchlib

pillow_heif.register_heif_opener()

SRGB = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB"))


def render(data, x, y, side, size):
    im = Image.open(io.BytesIO(data))
    stored_w, stored_h = im.size
    if im.format == "JPEG":
        # Ask for the stored image scaled so that the crop keeps >= `size` pixels a side.
        want = size / side
        im.draft("RGB", (math.ceil(stored_w * want), math.ceil(stored_h * want)))
    factor = stored_w / im.size[0]  # 1, 2, 4 or 8 after draft
    icc = im.info.get("icc_profile")
    im = ImageOps.exif_transpose(im)
    box = (x / factor, y / factor, (x + side) / factor, (y + side) / factor)
    left, top = math.floor(box[0]), math.floor(box[1])
    right, bottom = min(math.ceil(box[2]), im.size[0]), min(math.ceil(box[3]), im.size[1])
    im = im.crop((left, top, right, bottom))
    if im.mode != "RGB":
        im = im.convert("RGB")
    if icc:
        src = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        im = ImageCms.profileToProfile(im, src, SRGB, renderingIntent=ImageCms.Intent.PERCEPTUAL,
                                       outputMode="RGB")
    sub = (box[0] - left, box[1] - top, box[2] - left, box[3] - top)
    im = im.resize((size, size), Image.Resampling.LANCZOS, box=sub)
    out = io.BytesIO()
    im.save(out, "PNG")
    return out.getvalue()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--job", required=True)
    parser.add_argument("--save", help="write each pose's last output as DIR/POSE.IMPL.png")
    args = parser.parse_args()
    Image.preinit()
    benchlib.run("pillow", render, args.job, args.save)


if __name__ == "__main__":
    main()
