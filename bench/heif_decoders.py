#!/usr/bin/env python3
"""Which libheif decoder plugin to install: libde265 vs ffmpeg for HEVC (HEIC), dav1d vs aom for AV1 (AVIF).

  heif_decoders.py --floor-bin PATH --python PATH IMAGE... [--rounds N] [--runs N] [--out FILE]

libheif picks the highest-priority plugin installed for a codec; the floor (bench/floor/floor.c) takes
FLOOR_HEIF_DECODER=ID to pick one. Per image and round, each decoder of the image's codec runs in a fresh
process (1 warm-up + RUNS timed decodes, one decoding thread as in the worker), the order alternating between
rounds (A B, B A, ...) so a change in the machine's load weighs on both alike. Two modes:
  whole   FLOOR_HEIF_WHOLE=1, a centred square of the whole image: every tile decoded (the decoder's cost)
  tiles   the same square through the tile decoder: only the tiles it touches
Reported per image, mode and decoder: the median process CPU time per decode + resize + PNG (all threads; on a
shared machine it moves far less than wall time) with its min-max over all runs, the median wall time, and
the ratio of the medians against the first decoder (the one libheif would pick). JSON lines go to --out.
"""
import argparse
import json
import statistics
import subprocess
import sys

DECODERS = {"hevc": ["libde265", "ffmpeg"], "av1": ["dav1d", "aom"]}


def header(python, image):
    """(codec, oriented width, height) from libvips' heifload."""
    out = subprocess.run([python, "-c", "import pyvips, sys; i = pyvips.Image.new_from_file(sys.argv[1]); "
                          "print(i.get('heif-compression'), i.width, i.height)", image],
                         capture_output=True, text=True, check=True).stdout.split()
    return out[0], int(out[1]), int(out[2])


def run_floor(floor, image, decoder, whole, region, runs):
    env = {"FLOOR_HEIF_DECODER": decoder, "FLOOR_HEIF_WHOLE": "1" if whole else "0", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([floor, image, "512", "1", str(runs)], input=region, env=env, capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise RuntimeError(f"floor {decoder} on {image}: {result.stderr.strip()}")
    pose = next(json.loads(line) for line in result.stdout.splitlines() if '"type":"pose"' in line)
    return pose["cpu_ms"], pose["ms"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--floor-bin", required=True)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out")
    parser.add_argument("images", nargs="+")
    args = parser.parse_args()
    out = open(args.out, "w") if args.out else None
    print("| image | codec | mode | decoder | CPU ms median (min-max) | wall ms median | CPU vs default |")
    print("|---|---|---|---|---:|---:|---:|")
    for image in args.images:
        codec, width, height = header(args.python, image)
        decoders = DECODERS.get(codec)
        if not decoders:
            continue
        side = min(width, height)
        region = f"centre 1 {(width - side) // 2} {(height - side) // 2} {side} {side}\n"
        for mode in ("whole", "tiles"):
            cpu = {d: [] for d in decoders}
            wall = {d: [] for d in decoders}
            for r in range(args.rounds):
                for decoder in (decoders if r % 2 == 0 else list(reversed(decoders))):
                    c, w = run_floor(args.floor_bin, image, decoder, mode == "whole", region, args.runs)
                    cpu[decoder] += c
                    wall[decoder] += w
            base = statistics.median(cpu[decoders[0]])
            name = image.rsplit("/", 1)[-1]
            for decoder in decoders:
                m = statistics.median(cpu[decoder])
                print(f"| {name} | {codec} | {mode} | {decoder} | {m:.0f} ({min(cpu[decoder]):.0f}-"
                      f"{max(cpu[decoder]):.0f}) | {statistics.median(wall[decoder]):.0f} | {m / base:.2f} |",
                      flush=True)
                if out:
                    out.write(json.dumps({"image": image, "codec": codec, "mode": mode, "decoder": decoder,
                                          "cpu_ms": cpu[decoder], "ms": wall[decoder]}) + "\n")
    if out:
        out.close()


if __name__ == "__main__":
    main()
