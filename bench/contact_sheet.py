#!/usr/bin/env python3
"""One PNG for a reviewer: per job, the source photo (upright, small) with the crop square the
worker applied drawn on it, the published avatar, and the job's outcome.

usage: contact_sheet.py JOBS.jsonl RESULTS.jsonl STORE-DIR OUT.png

JOBS.jsonl are the requests as enqueued (userId and sourceKey per line; every job has its own
user), RESULTS.jsonl the result events (protobuf JSON mapping, `avatar-cropper results --json`).
"""
import json
import sys

import pyvips

THUMB = 240  # the source's long edge on the sheet
AVATAR = 160
PAD = 16
TEXT_WIDTH = 300
SQUARE = [255, 40, 40]
FACE_KEPT = [40, 200, 40]
FACE_OTHER = [150, 150, 150]


def text(markup, width=TEXT_WIDTH):
    image = pyvips.Image.text(markup, width=width, dpi=96, font="sans 11", rgba=True)
    return image.flatten(background=[255, 255, 255]) if image.bands == 4 else image


def rgb(image):
    if image.hasalpha():
        image = image.flatten(background=[255, 255, 255])
    image = image.colourspace("srgb")
    return image if image.bands == 3 else image[0:3]


def outline(image, x, y, side, width, colour=SQUARE, height=None):
    height = side if height is None else height
    for offset in range(width):
        image = image.draw_rect(
            colour, x + offset, y + offset, max(1, side - 2 * offset), max(1, height - 2 * offset), fill=False)
    return image


def row(job, result, store):
    source = pyvips.Image.new_from_file(f"{store}/{job['sourceKey']}", access="sequential")
    source = rgb(source.autorot())
    thumb = source.thumbnail_image(THUMB, height=THUMB)
    scale = thumb.width / source.width
    outcome = result.get("success") if result else None
    if outcome:
        crop = outcome.get("crop", {})
        side = int(crop.get("side", 0) * scale)
        thumb = thumb.copy_memory()
        # The faces the detector found (a request without a pose): kept ones green, the others grey.
        for face in crop.get("faces", []):
            thumb = outline(
                thumb, int(face.get("x", 0) * scale), int(face.get("y", 0) * scale),
                max(1, int(face.get("width", 0) * scale)), 2, FACE_KEPT if face.get("kept") else FACE_OTHER,
                height=max(1, int(face.get("height", 0) * scale)))
        if side > 0:
            thumb = outline(thumb, int(crop.get("x", 0) * scale), int(crop.get("y", 0) * scale), side, 3)
        avatar = rgb(pyvips.Image.new_from_file(f"{store}/{outcome['avatarPath']}")).thumbnail_image(AVATAR)
        lines = [
            f"<b>{outcome.get('disposition', 'APPLIED').removeprefix('DISPOSITION_').lower()}</b>"
            f" — version {outcome.get('avatarVersion', '?')}",
            f"crop {crop.get('side', 0)} px at ({crop.get('x', 0)}, {crop.get('y', 0)}) "
            f"of {crop.get('sourceWidth', '?')}×{crop.get('sourceHeight', '?')}",
            f"zoom {crop.get('scaleApplied', 0):.2f} (s_min {crop.get('sMin', 0):.2f}, s_max {crop.get('sMax', 0):.2f})",
        ]
        if crop.get("faces") or crop.get("faceRuleUsed"):
            lines.append(f"{len(crop.get('faces', []))} face(s); square by the face rule: "
                         f"{'yes' if crop.get('faceRuleUsed') else 'no'}")
        if outcome.get("fallbackUsed"):
            lines.append("fallback: thumbnail-resolution decode")
        if outcome.get("notice"):
            lines.append(f"<i>{escape(outcome['notice'])}</i>")
    else:
        failure = (result or {}).get("failure", {})
        avatar = pyvips.Image.black(AVATAR, AVATAR, bands=3).new_from_image([235, 235, 235])
        lines = [
            f"<b>failed: {escape(failure.get('errorCode', 'no result'))}</b>",
            f"<i>{escape(failure.get('userMessage', ''))}</i>",
        ]
    name = job["sourceKey"].rsplit("/", 1)[-1]
    caption = text("\n".join([f"<b>{escape(name)}</b>"] + lines))
    thumb = thumb.gravity("north-west", THUMB, thumb.height, extend="white")
    return join([thumb, avatar, caption], "horizontal")


def join(images, direction):
    """Side by side or one under the other, PAD apart, each keeping its own size."""
    out = images[0]
    for image in images[1:]:
        out = out.join(image, direction, shim=PAD, background=[255, 255, 255], expand=True)
    return out


def escape(value):
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main():
    jobs_path, results_path, store, out = sys.argv[1:5]
    jobs = [json.loads(line) for line in open(jobs_path) if line.strip()]
    results = {}
    for line in open(results_path):
        if line.strip():
            event = json.loads(line)
            results[event.get("userId", "").lower()] = event
    rows = [row(job, results.get(job["userId"].lower()), store) for job in jobs]
    title = text("<b>avatar-cropper demo</b>: each photo upright with the crop square the worker applied (red), "
                 "the published avatar, and the job's outcome; faces found without a pose in green (kept) and grey",
                 width=max(r.width for r in rows))
    sheet = join([title] + rows, "vertical")
    sheet = sheet.embed(PAD, PAD, sheet.width + 2 * PAD, sheet.height + 2 * PAD, extend="white")
    sheet.pngsave(out, strip=True)


if __name__ == "__main__":
    main()
