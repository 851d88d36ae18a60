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
import os
import statistics
import sys
import tempfile

from benchlib import plan_one_pose, run_one_pose


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
        jobs = []
        for index, image in enumerate(args.images):
            job = os.path.join(directory, f"{index}.json")
            plan_one_pose(args.after, image, {"name": args.pose, "spec": {"kind": args.pose}}, args.runs, job)
            jobs.append((image, job))
        for round_index in range(args.rounds):
            order = ["before", "after"] if round_index % 2 == 0 else ["after", "before"]
            for image, job in jobs:
                for build in order:
                    pose, peak = run_one_pose(lambda path: [builds[build], "run", "--job", path], job)
                    entry = samples.setdefault((image, build), {"ms": [], "peak": []})
                    entry["ms"] += pose["ms"]
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
