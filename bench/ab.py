#!/usr/bin/env python3
"""Two builds of avatar-bench on the same photos, interleaved: what one change to the renderer buys.

    bench/ab.py --before BIN --after BIN [--rounds 4] [--runs 3] [--pose centred] IMAGE...

Each image is planned once (the `after` build's plan, so both render the same square), then rendered in fresh
processes by both builds, `--runs` timed renders after one warm-up per process, round after round with the two
builds' order reversed every other round (so drift on a noisy machine falls on both). Prints, per image and build,
the median render (min-max) and peak RSS above the process's baseline, and the after/before ratio of the medians.
Make the `before` build from the commit before the change (e.g. `git worktree add`, or `git stash` and build),
and copy each `avatar-bench` out of `.build/release` before building the other.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def plan(binary, image, pose, runs, directory):
    job = os.path.join(directory, os.path.basename(image) + ".json")
    with open(job, "w") as f:
        json.dump({"image": os.path.abspath(image), "runs": runs, "warmup": 1, "output": 512,
                   "poses": [{"name": pose, "spec": {"kind": pose}}]}, f)
    planned = subprocess.run([binary, "plan", "--job", job], check=True, capture_output=True, text=True).stdout
    with open(job, "w") as f:
        f.write(planned)
    return job


def run(binary, job):
    out = subprocess.run([binary, "run", "--job", job], check=True, capture_output=True, text=True).stdout
    ms, peak = [], None
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        ms += record.get("ms", [])
        peak = record.get("peak_above_baseline_mb", peak)
    return ms, peak


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pose", default="centred")
    parser.add_argument("images", nargs="+")
    args = parser.parse_args()

    builds = {"before": args.before, "after": args.after}
    samples = {}  # (image, build) -> {"ms": [...], "peak": [...]}
    with tempfile.TemporaryDirectory() as directory:
        jobs = [(image, plan(args.after, image, args.pose, args.runs, directory)) for image in args.images]
        for round_index in range(args.rounds):
            order = ["before", "after"] if round_index % 2 == 0 else ["after", "before"]
            for image, job in jobs:
                for build in order:
                    ms, peak = run(builds[build], job)
                    entry = samples.setdefault((image, build), {"ms": [], "peak": []})
                    entry["ms"] += ms
                    if peak is not None:
                        entry["peak"].append(peak)
            print(f"ab: round {round_index + 1} of {args.rounds} done", file=sys.stderr, flush=True)

    print("| image | before ms | after ms | after / before | peak MB above baseline, before → after |")
    print("|---|---:|---:|---:|---|")
    for image in args.images:
        before, after = samples[(image, "before")], samples[(image, "after")]
        b, a = statistics.median(before["ms"]), statistics.median(after["ms"])
        print(f"| {os.path.basename(image)} | {b:.0f} ({min(before['ms']):.0f}–{max(before['ms']):.0f}) "
              f"| {a:.0f} ({min(after['ms']):.0f}–{max(after['ms']):.0f}) | {a / b:.2f} "
              f"| {statistics.median(before['peak']):.1f} → {statistics.median(after['peak']):.1f} |")


if __name__ == "__main__":
    main()
