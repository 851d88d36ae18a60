#!/usr/bin/env python3
"""The face rule's cost from `avatar-bench faces` (bench/bench-faces.sh): per photo, the no-pose render with the
face rule against the centred one measured in the same process, interleaved; the detection's own time (the small
decode and the detector together, and the detector alone); the model's load; what keeping one network costs a mix
of canvases. Targets (the face-rule issue):
detection <= 15 ms p95 per job on one core, the whole no-pose render <= 1.3x the centred one, model load <= 150 ms,
resident memory + <= 30 MB.

usage: faces_report.py FACES.jsonl [BUILD]
"""
import json
import os
import statistics
import sys


def pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    index = min(len(values) - 1, max(0, round(q * (len(values) - 1))))
    return values[index]


def main():
    path = sys.argv[1]
    build = sys.argv[2] if len(sys.argv) > 2 else "release"
    records = [json.loads(line) for line in open(path) if line.strip()]
    load = next(r for r in records if r["type"] == "face-load")
    rows = [r for r in records if r["type"] == "face-image"]
    print(f"face rule vs centred, no pose, one libvips thread ({build} build); {path}")
    print(f"model load: {load['load_ms']:.1f} ms (target <= 150), then the first face-rule render "
          f"{load['first_render_ms']:.0f} ms; resident memory added: {load['rss_added_mb']:.1f} MiB (target <= 30)")
    header = (f"{'photo':44} {'size':>11} {'faces':>5} {'rule':>4} {'centred p50':>11} {'face p50':>9} "
              f"{'ratio':>6} {'ratio range':>13} {'detect p50':>10} {'p95':>6} {'detector p50':>12} {'p95':>6}")
    print(header)
    all_detect = []
    all_detector = []
    worst_ratio = 0
    for r in rows:
        centred, face, detect = r["centred_ms"], r["face_ms"], r["detect_ms"]
        all_detect += detect
        detector = r.get("detector_ms", [])
        all_detector += detector
        ratio = statistics.median(face) / statistics.median(centred)
        worst_ratio = max(worst_ratio, ratio)
        # The spread: the ratio of each round's medians would need the rounds apart; min/max over paired runs.
        pairs = [f / c for f, c in zip(face, centred)]
        print(f"{os.path.basename(r['image'])[:44]:44} {r['source_width']:>5}x{r['source_height']:<5} "
              f"{r['faces']:>5} {'yes' if r['rule_used'] else 'no':>4} {statistics.median(centred):>11.1f} "
              f"{statistics.median(face):>9.1f} {ratio:>6.2f} {min(pairs):>6.2f}–{max(pairs):<6.2f} "
              f"{statistics.median(detect):>10.1f} {pct(detect, 0.95):>6.1f} "
              f"{statistics.median(detector) if detector else float('nan'):>12.1f} {pct(detector, 0.95):>6.1f}")
    memory = next((r for r in records if r["type"] == "face-memory"), None)
    if memory:
        print(f"resident memory added once {memory['canvases']} small photos ran every canvas's network (free heap "
              f"trimmed at both ends): {memory['rss_all_canvases_added_mb']:.1f} MiB (target <= 30)")
    mixed = next((r for r in records if r["type"] == "face-mixed"), None)
    if mixed:
        one, every = mixed["kept_one_ms"], mixed["kept_all_ms"]
        print(f"a backfill's mix ({mixed['canvases']} canvases in turn, no pose, face rule): "
              f"p50 {statistics.median(one):.1f} ms with one network kept (a render helper's), "
              f"{statistics.median(every):.1f} ms with every canvas's kept: "
              f"{statistics.median(one) - statistics.median(every):+.1f} ms per render ({len(one)} renders each)")
    print(f"detection p95 over all jobs: {pct(all_detect, 0.95):.1f} ms with the small decode, "
          f"{pct(all_detector, 0.95):.1f} ms the detector alone (target <= 15); "
          f"worst whole-render ratio: {worst_ratio:.2f} (target <= 1.3)")


if __name__ == "__main__":
    main()
