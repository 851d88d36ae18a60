#!/usr/bin/env python3
"""A HEIF grid's tiles on every idle core (docs/ARCHITECTURE.md §3, "Decode cores"): the centred-pose render of
each HEIC/AVIF and of its JPEG twin, one job in flight, on one decoding thread against the decode cores.

  tiles.py --bench-bin PATH --corpus DIR --fixtures DIR --cache DIR --out FILE [--rounds N] [--runs N]

Configurations, each a fresh `avatar-bench run` process per image (1 warm-up + RUNS timed renders):
  one-thread   --decode-cores 1: every tile on the render's own thread (before this change)
  cores        the default, as the worker: the machine's cores, extra tile threads on the idle ones
  one-cpu      the default pinned to one CPU (taskset -c 0): what the same binary does on a one-core machine
Rounds interleave them, the order reversed every other round, so a change in the machine's load weighs on every
configuration alike. Reported per image and configuration: the median of all timed renders with its min-max,
the ratio against the JPEG twin's render in the same configuration, the speed-up against one-thread, and the
peak RSS above the process's baseline. JSON lines go to --out; a table is printed.
"""
import argparse
import json
import os
import statistics
import sys

from benchlib import plan_one_pose, run_one_pose
from driver import heif_images, slug
from gen_inputs import make_twins, twin_name

CONFIGS = {
    "one-thread": (["--decode-cores", "1"], []),
    "cores": ([], []),
    "one-cpu": ([], ["taskset", "-c", "0"]),
}
POSE = {"name": "centred", "spec": {"kind": "centred"}}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench-bin", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--fixtures", required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    heif = heif_images(args.corpus, args.fixtures, args.cache)
    make_twins(heif, args.cache)
    jobs_dir = os.path.join(os.path.dirname(os.path.abspath(args.out)), "tiles-jobs")
    os.makedirs(jobs_dir, exist_ok=True)
    pairs = []
    for image in heif:
        twin = os.path.abspath(os.path.join(args.cache, twin_name(image)))
        paths = []
        for path in (image, twin):
            job_path = os.path.join(jobs_dir, slug(path) + ".json")
            plan_one_pose(args.bench_bin, path, POSE, args.runs, job_path)
            paths.append(job_path)
        pairs.append((slug(image), paths))

    samples = {}  # (image, config, which) -> {"ms": [...], "peak": [...]}
    with open(args.out, "w") as out:
        for round_index in range(args.rounds):
            order = list(CONFIGS) if round_index % 2 == 0 else list(reversed(CONFIGS))
            for name, (image_job, twin_job) in pairs:
                for config in order:
                    flags, prefix = CONFIGS[config]
                    for which, job in (("heif", image_job), ("twin", twin_job)):
                        pose, peak = run_one_pose(
                            lambda path: prefix + [args.bench_bin, "run", "--job", path] + flags, job)
                        entry = samples.setdefault((name, config, which), {"ms": [], "peak": []})
                        entry["ms"] += pose["ms"]
                        entry["peak"].append(peak)
                        out.write(json.dumps({"round": round_index, "image": name, "config": config, "which": which,
                                              "ms": pose["ms"], "decoder": pose["decoder"], "peak_mb": peak}) + "\n")
                        out.flush()
            print(f"tiles: round {round_index + 1} of {args.rounds} done", file=sys.stderr, flush=True)

    print("| image | configuration | render ms, median (min-max) | twin ms | / twin | speed-up vs one-thread | peak MB |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, _ in pairs:
        base = statistics.median(samples[(name, "one-thread", "heif")]["ms"])
        for config in CONFIGS:
            ms = samples[(name, config, "heif")]["ms"]
            twin = statistics.median(samples[(name, config, "twin")]["ms"])
            median = statistics.median(ms)
            peak = max(samples[(name, config, "heif")]["peak"])
            print(f"| {name} | {config} | {median:.0f} ({min(ms):.0f}-{max(ms):.0f}) | {twin:.0f} | "
                  f"{median / twin:.2f} | {base / median:.2f} | {peak:.1f} |")


if __name__ == "__main__":
    main()
