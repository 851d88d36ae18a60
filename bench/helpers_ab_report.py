#!/usr/bin/env python3
"""Prints two builds' render helpers side by side (bench/bench-helpers-ab.sh writes the input): per photo the lone
job's median wall time back to back and at low load (each job after a pause) and the full-load throughput, each as
the median (min – max) over the rounds with the round-by-round difference or ratio; then the whole worker's PSS at
its peak and at rest, and a helper's replacement. (The CPU per lone job the records also carry is left out: it misses the CPU of helpers
already killed.)

Usage: helpers_ab_report.py helpers-ab.jsonl"""
import json
import statistics
import sys


def spread(values, digits=1):
    values = sorted(values)
    return f"{statistics.median(values):.{digits}f} ({values[0]:.{digits}f} – {values[-1]:.{digits}f})"


def main(path):
    costs, memory = {}, {}
    for line in open(path):
        record = json.loads(line)
        if record["type"] == "helper-cost":
            costs.setdefault(record["image"], {}).setdefault(record["round"], {})[record["build"]] = record
        elif record["type"] == "helper-memory":
            memory.setdefault(record["round"], {})[record["build"]] = record
    print("| photo | lone job back to back before, ms | after, ms | added, ms | at low load before, ms | after, ms "
          "| added, ms | full load before, jobs/s | after | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for image, by_round in costs.items():
        pairs = [r for r in by_round.values() if "before" in r and "after" in r]
        field = lambda build, key: [r[build][key] for r in pairs]
        lone_b, lone_a = field("before", "lone_ms_median"), field("after", "lone_ms_median")
        idle_b, idle_a = field("before", "idle_lone_ms_median"), field("after", "idle_lone_ms_median")
        tp_b, tp_a = field("before", "full_load_jobs_per_s"), field("after", "full_load_jobs_per_s")
        print(f"| {image.rsplit('/', 1)[-1]} | {spread(lone_b)} | {spread(lone_a)} "
              f"| {spread([a - b for a, b in zip(lone_a, lone_b)])} | {spread(idle_b)} | {spread(idle_a)} "
              f"| {spread([a - b for a, b in zip(idle_a, idle_b)])} | {spread(tp_b, 2)} | {spread(tp_a, 2)} "
              f"| {spread([a / b for a, b in zip(tp_a, tp_b)], 3)} |")
    pairs = [r for r in memory.values() if "before" in r and "after" in r]
    if pairs:
        before = [r["before"]["whole_pss_peak_mb"] for r in pairs]
        after = [r["after"]["whole_pss_peak_mb"] for r in pairs]
        print(f"\nThe whole worker's peak PSS, MB: before {spread(before)}, after {spread(after)}, "
              f"ratio {spread([a / b for a, b in zip(after, before)], 3)}")
        rest_b = [r["before"]["whole_pss_mb"] for r in pairs]
        rest_a = [r["after"]["whole_pss_mb"] for r in pairs]
        print(f"At rest (2 s after the last job), MB: before {spread(rest_b)}, after {spread(rest_a)}, "
              f"ratio {spread([a / b for a, b in zip(rest_a, rest_b)], 3)}")
        for build in ("before", "after"):
            medians = [statistics.median(r[build]["helper_replace_ms"]) for r in pairs if r[build]["helper_replace_ms"]]
            if medians:
                print(f"A helper's replacement {build} (median of each run), ms: {spread(medians)}")


if __name__ == "__main__":
    main(sys.argv[1])
