#!/usr/bin/env python3
"""Reports `avatar-bench formats` (bench/bench-formats.sh): per format the bytes per 512² avatar (median and range
over the photos), the encode CPU on one core (p50, p95 over every run of every photo), the SSIM against the same
photo's PNG (median and worst), and the CPU of a job publishing PNG + WebP + AVIF at 512 and WebP at 128 against a
PNG-only one (ratio of medians, and the spread of per-round ratios). Writes a contact sheet: per photo the PNG, JPEG,
WebP and AVIF avatars side by side.

Usage: formats_report.py FORMATS.jsonl SAVED_DIR SHEET.png"""
import json
import statistics
import sys

import numpy
import pyvips

ORDER = ["png", "jpeg", "webp", "avif"]
EXTENSIONS = {"png": "png", "jpeg": "jpg", "webp": "webp", "avif": "avif"}


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))]


def uniform_mean(image, size):
    """Mean over every size × size window (valid windows only), by summed-area table."""
    table = numpy.pad(image, ((1, 0), (1, 0))).cumsum(0).cumsum(1)
    return (table[size:, size:] - table[:-size, size:] - table[size:, :-size] + table[:-size, :-size]) / size ** 2


def ssim(a, b, size=7, data_range=255.0):
    """Mean SSIM over the channels (Wang et al. 2004) with scikit-image's defaults: 7 × 7 uniform windows, sample
    covariance, K1 0.01, K2 0.03; valid windows only (skimage's figure crops the same border)."""
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    normalise = size * size / (size * size - 1)
    values = []
    for channel in range(a.shape[2]):
        x, y = a[:, :, channel].astype(numpy.float64), b[:, :, channel].astype(numpy.float64)
        ux, uy = uniform_mean(x, size), uniform_mean(y, size)
        vx = normalise * (uniform_mean(x * x, size) - ux * ux)
        vy = normalise * (uniform_mean(y * y, size) - uy * uy)
        vxy = normalise * (uniform_mean(x * y, size) - ux * uy)
        s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
        values.append(s.mean())
    return float(numpy.mean(values))


def pixels(path):
    image = pyvips.Image.new_from_file(path)
    return numpy.ndarray(buffer=image.write_to_memory(), dtype=numpy.uint8,
                         shape=[image.height, image.width, image.bands])


def main():
    records_path, saved, sheet = sys.argv[1:4]
    records = [json.loads(line) for line in open(records_path) if line.strip()]
    formats = [r for r in records if r["type"] == "format"]
    jobs = [r for r in records if r["type"] == "format-job"]
    images = sorted({r["image"] for r in formats})
    similarity = {}
    for image in images:
        reference = pixels(f"{saved}/{image}.png")
        for format in ORDER[1:]:
            similarity.setdefault(format, []).append(
                ssim(reference, pixels(f"{saved}/{image}.{EXTENSIONS[format]}")))
    print(f"{len(images)} photos, 512² avatars, one libvips thread; encode CPU on the render's thread\n")
    print("| Format | bytes, median (range) | vs PNG | encode CPU p50 / p95 ms | SSIM vs PNG, median (worst) |")
    print("|---|---|---|---|---|")
    png_median = statistics.median(r["bytes"] for r in formats if r["format"] == "png")
    for format in ORDER:
        rows = [r for r in formats if r["format"] == format]
        sizes = [r["bytes"] for r in rows]
        cpu = [ms for r in rows for ms in r["encode_cpu_ms"]]
        median = statistics.median(sizes)
        quality = (f"{statistics.median(similarity[format]):.4f} ({min(similarity[format]):.4f})"
                   if format in similarity else "(reference)")
        print(f"| {format} | {median / 1024:.1f} KiB ({min(sizes) / 1024:.1f}–{max(sizes) / 1024:.1f}) | "
              f"{median / png_median:.2f} | {percentile(cpu, 50):.1f} / {percentile(cpu, 95):.1f} | {quality} |")
    if jobs:
        png = [ms for r in jobs for ms in r["png_only_cpu_ms"]]
        multi = [ms for r in jobs for ms in r["multi_format_cpu_ms"]]
        ratios = [m / p for r in jobs for p, m in zip(r["png_only_cpu_ms"], r["multi_format_cpu_ms"])]
        print(f"\nJob CPU, PNG-only vs PNG + WebP + AVIF at 512 + WebP at 128 (whole render, {len(png)} rounds "
              f"interleaved): median {statistics.median(png):.1f} ms vs {statistics.median(multi):.1f} ms, ratio of "
              f"medians {statistics.median(multi) / statistics.median(png):.2f}, per-round ratios "
              f"{min(ratios):.2f}–{max(ratios):.2f} (median {statistics.median(ratios):.2f})")
    tiles = []
    for image in images:
        row = [pyvips.Image.new_from_file(f"{saved}/{image}.{EXTENSIONS[f]}").resize(0.5) for f in ORDER]
        tiles.append(pyvips.Image.arrayjoin(row, shim=4))
    pyvips.Image.arrayjoin(tiles, across=1, shim=4).write_to_file(sheet)
    print(f"\ncontact sheet: {sheet} (per row: PNG, JPEG, WebP, AVIF)")


if __name__ == "__main__":
    main()
