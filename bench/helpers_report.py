#!/usr/bin/env python3
"""Prints what the render helpers cost (bench/bench-helpers.sh writes the input): per photo, the lone job's
median time in each mode and what the helper adds (median of the rounds' differences, with their range), the
full-load throughput ratio, and per mode the whole process's peak memory; the helper start time; job by job,
against today's in-process render. The
sandboxed-render issue's targets: <= 3 ms added per job at the median, throughput within 5 %, peak RSS of the
whole worker within +25 %, a helper replaced in <= 150 ms. They were set for helpers that served job after job; the
sandbox issue's one job per helper has its own, against that reuse (bench-helpers-ab.sh, helpers_ab_report.py).

Usage: helpers_report.py helpers.jsonl"""
import json
import statistics
import sys


def spread(values, digits=1):
    values = sorted(values)
    return f"{statistics.median(values):.{digits}f} ({values[0]:.{digits}f} – {values[-1]:.{digits}f})"


def main(path):
    costs, memory, paired = {}, {}, []
    for line in open(path):
        record = json.loads(line)
        if record["type"] == "helper-paired":
            paired.append(record)
        elif record["type"] == "helper-cost":
            costs.setdefault(record["image"], {}).setdefault(record["round"], {})[record["mode"]] = record
        elif record["type"] == "helper-memory":
            memory.setdefault(record["round"], {})[record["mode"]] = record
    rounds = len(memory)
    print(f"Render helpers against in-process, {rounds} rounds alternating the modes (median (min – max) over rounds)\n")
    print("| photo | lone job in-process, ms | in a helper, ms | added per job, ms | full load jobs/s in-process "
          "| in helpers | throughput ratio |")
    print("|---|---|---|---|---|---|---|")
    for image, by_round in costs.items():
        pairs = [r for r in by_round.values() if "in-process" in r and "helpers" in r]
        local = [r["in-process"]["lone_ms_median"] for r in pairs]
        helped = [r["helpers"]["lone_ms_median"] for r in pairs]
        added = [h - l for h, l in zip(helped, local)]
        local_tp = [r["in-process"]["full_load_jobs_per_s"] for r in pairs]
        helped_tp = [r["helpers"]["full_load_jobs_per_s"] for r in pairs]
        ratio = [h / l for h, l in zip(helped_tp, local_tp)]
        name = image.rsplit("/", 1)[-1]
        print(f"| {name} | {spread(local)} | {spread(helped)} | {spread(added)} | {spread(local_tp, 2)} "
              f"| {spread(helped_tp, 2)} | {spread(ratio, 3)} |")
    print("\nCPU time per lone job, the whole process tree (this process, the template and every helper, ended ones "
          "included, all threads), "
          "median (min – max) over rounds:\n")
    print("| photo | in-process, ms | in a helper, ms | added per job, ms |")
    print("|---|---|---|---|")
    for image, by_round in costs.items():
        pairs = [r for r in by_round.values() if "in-process" in r and "helpers" in r
                 and "lone_cpu_ms_per_job" in r["in-process"]]
        if not pairs:
            continue
        local = [r["in-process"]["lone_cpu_ms_per_job"] for r in pairs]
        helped = [r["helpers"]["lone_cpu_ms_per_job"] for r in pairs]
        added = [h - l for h, l in zip(helped, local)]
        print(f"| {image.rsplit('/', 1)[-1]} | {spread(local)} | {spread(helped)} | {spread(added)} |")
    pairs = [r for r in memory.values() if "in-process" in r and "helpers" in r]
    if pairs:
        local = [r["in-process"]["whole_peak_mb"] for r in pairs]
        helped = [r["helpers"]["whole_peak_mb"] for r in pairs]
        pss = [r["helpers"]["whole_pss_mb"] for r in pairs]
        local_pss = [r["in-process"]["whole_pss_mb"] for r in pairs]
        helpers = pairs[0]["helpers"]["helpers"]
        print(f"\nPeak memory after every photo, {pairs[0]['helpers']['slots']} slots ({helpers} processes: the "
              f"helpers and their template):")
        print(f"- in-process: peak RSS {spread(local)} MB (PSS at rest, 2 s after the last job: {spread(local_pss)} MB)")
        print(f"- helpers: the worker's peak RSS plus every helper's, {spread(helped)} MB: "
              f"ratio {spread([h / l for h, l in zip(helped, local)], 2)}; the sum counts the libraries once per "
              f"helper, the proportional set size at rest shares them: {spread(pss)} MB, "
              f"ratio {spread([p / l for p, l in zip(pss, local)], 2)}")
        if all("whole_pss_peak_mb" in r[mode] for r in pairs for mode in ("in-process", "helpers")):
            peak = [r["helpers"]["whole_pss_peak_mb"] for r in pairs]
            local_peak = [r["in-process"]["whole_pss_peak_mb"] for r in pairs]
            print(f"- while the jobs ran (sampled every 100 ms), the most held at once as PSS: in-process "
                  f"{spread(local_peak)} MB, with helpers (all processes) {spread(peak)} MB: ratio "
                  f"{spread([h / l for h, l in zip(peak, local_peak)], 2)}; against the in-process peak RSS "
                  f"{spread([h / l for h, l in zip(peak, local)], 2)}")
        starts = [s for r in pairs for s in r["helpers"]["helper_start_ms"]]
        print(f"- a pool's first helper ready (the template's spawn, the fork, warm-up render, lockdown): "
              f"{spread(starts)} ms over {len(starts)} starts")
        replaced = [s for r in pairs for s in r["helpers"].get("helper_replace_ms", [])]
        if replaced:
            print(f"- a helper replaced (killed while idle; the next job's helper forked from the template and "
                  f"ready): {spread(replaced)} ms over {len(replaced)} replacements")
    records = paired
    if records:
        print(f"\nJob by job against today's in-process render (`--mode paired`: an in-process job and a helper job in turn in one "
              f"process, the order swapped every pair; {records[0]['pairs']} pairs per photo): the median of the "
              f"pairs' differences, with the middle half of them; a helper job's CPU time and faults include its "
              f"replacement's fork and rehearsal, after its wall time")
        load = records[0].get("load_pairs", 0)
        if load:
            print(f"\nThroughput batch against batch: {load} pairs of {records[0]['load_jobs']} jobs on every slot, "
                  f"in-process and in helpers in turn; jobs/s in helpers over in-process, median (middle half).")
        print("\n| photo | CPU per job in-process, ms | in a helper | added CPU, ms | added wall, ms "
              "| page faults per job, in-process / helper | throughput ratio |")
        print("|---|---|---|---|---|---|---|")
        for record in records:
            cpu, wall = record["added_cpu_ms_quartiles"], record["added_wall_ms_quartiles"]
            ratio = record.get("throughput_ratio_quartiles") or []
            throughput = f"{record['throughput_ratio']:.3f} ({ratio[0]:.3f} – {ratio[1]:.3f})" if ratio else "–"
            print(f"| {record['image'].rsplit('/', 1)[-1]} | {record['in_process_cpu_ms']:.1f} | "
                  f"{record['helper_cpu_ms']:.1f} | {record['added_cpu_ms']:.2f} ({cpu[0]:.1f} – {cpu[1]:.1f}) | "
                  f"{record['added_wall_ms']:.2f} ({wall[0]:.1f} – {wall[1]:.1f}) | "
                  f"{record['in_process_faults']:.0f} / {record['helper_faults']:.0f} | {throughput} |")

if __name__ == "__main__":
    main(sys.argv[1])
