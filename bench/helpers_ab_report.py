#!/usr/bin/env python3
"""Prints two builds' render helpers side by side (bench/bench-helpers-ab.sh writes the input): per photo the lone
job's median wall time, the whole process tree's CPU per lone job and the full-load throughput, each as the median
(min – max) over the rounds with the round-by-round difference or ratio; then the whole worker's peak PSS.

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
    print("| photo | lone job before, ms | after, ms | added, ms | CPU per job before, ms | after, ms | added, ms "
          "| full load before, jobs/s | after | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for image, by_round in costs.items():
        pairs = [r for r in by_round.values() if "before" in r and "after" in r]
        field = lambda build, key: [r[build][key] for r in pairs]
        lone_b, lone_a = field("before", "lone_ms_median"), field("after", "lone_ms_median")
        cpu_b, cpu_a = field("before", "lone_cpu_ms_per_job"), field("after", "lone_cpu_ms_per_job")
        tp_b, tp_a = field("before", "full_load_jobs_per_s"), field("after", "full_load_jobs_per_s")
        print(f"| {image.rsplit('/', 1)[-1]} | {spread(lone_b)} | {spread(lone_a)} "
              f"| {spread([a - b for a, b in zip(lone_a, lone_b)])} | {spread(cpu_b)} | {spread(cpu_a)} "
              f"| {spread([a - b for a, b in zip(cpu_a, cpu_b)])} | {spread(tp_b, 2)} | {spread(tp_a, 2)} "
              f"| {spread([a / b for a, b in zip(tp_a, tp_b)], 3)} |")
    pairs = [r for r in memory.values() if "before" in r and "after" in r]
    if pairs:
        before = [r["before"]["whole_pss_peak_mb"] for r in pairs]
        after = [r["after"]["whole_pss_peak_mb"] for r in pairs]
        print(f"\nThe whole worker's peak PSS, MB: before {spread(before)}, after {spread(after)}, "
              f"ratio {spread([a / b for a, b in zip(after, before)], 3)}")


if __name__ == "__main__":
    main(sys.argv[1])
