#!/usr/bin/env python3
"""One PNG for a reviewer: per job, the source photo (upright, small) with the crop square the
worker applied drawn on it, the published avatar, and the job's outcome.

usage: contact_sheet.py JOBS.jsonl IDS.txt RESULTS.jsonl STORE-DIR OUT.png

JOBS.jsonl are the requests as enqueued (sourceKey per line), IDS.txt the job ids the enqueue
printed (same order), RESULTS.jsonl the result events (protobuf JSON mapping, `results --json`).
"""
import json
import sys

import pyvips

THUMB = 240  # the source's long edge on the sheet
AVATAR = 160
PAD = 16
TEXT_WIDTH = 300
SQUARE = [255, 40, 40]


def text(markup, width=TEXT_WIDTH):
    image = pyvips.Image.text(markup, width=width, dpi=96, font="sans 11", rgba=True)
    return image.flatten(background=[255, 255, 255]) if image.bands == 4 else image


def rgb(image):
    if image.hasalpha():
        image = image.flatten(background=[255, 255, 255])
    image = image.colourspace("srgb")
    return image if image.bands == 3 else image[0:3]


def outline(image, x, y, side, width):
    for offset in range(width):
        image = image.draw_rect(SQUARE, x + offset, y + offset, side - 2 * offset, side - 2 * offset, fill=False)
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
        if side > 0:
            thumb = outline(
                thumb.copy_memory(), int(crop.get("x", 0) * scale), int(crop.get("y", 0) * scale), side, 3)
        avatar = rgb(pyvips.Image.new_from_file(f"{store}/{outcome['avatarPath']}")).thumbnail_image(AVATAR)
        lines = [
            f"<b>{outcome.get('disposition', 'APPLIED').lower()}</b> — version {outcome.get('avatarVersion', '?')}",
            f"crop {crop.get('side', 0)} px at ({crop.get('x', 0)}, {crop.get('y', 0)}) "
            f"of {crop.get('sourceWidth', '?')}×{crop.get('sourceHeight', '?')}",
            f"zoom {crop.get('scaleApplied', 0):.2f} (s_min {crop.get('sMin', 0):.2f}, s_max {crop.get('sMax', 0):.2f})",
        ]
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
    cells = [thumb, avatar, caption]
    height = max(cell.height for cell in cells)
    cells = [cell.gravity("north-west", cell.width, height, extend="white") for cell in cells]
    return pyvips.Image.arrayjoin(cells, across=3, shim=PAD, background=[255, 255, 255])


def escape(value):
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main():
    jobs_path, ids_path, results_path, store, out = sys.argv[1:6]
    jobs = [json.loads(line) for line in open(jobs_path) if line.strip()]
    ids = [line.strip() for line in open(ids_path) if line.strip()]
    results = {}
    for line in open(results_path):
        if line.strip():
            event = json.loads(line)
            results[event["jobId"]] = event
    rows = [row(job, results.get(job_id), store) for job, job_id in zip(jobs, ids)]
    width = max(r.width for r in rows)
    rows = [r.gravity("west", width, r.height, extend="white") for r in rows]
    title = text("<b>avatar-cropper demo</b>: source (upright) with the applied crop square · avatar · outcome",
                 width=width)
    sheet = pyvips.Image.arrayjoin([title] + rows, across=1, shim=PAD, background=[255, 255, 255])
    sheet = sheet.embed(PAD, PAD, sheet.width + 2 * PAD, sheet.height + 2 * PAD, extend="white")
    sheet.pngsave(out, strip=True)


if __name__ == "__main__":
    main()
