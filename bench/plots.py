#!/usr/bin/env python3
"""The bench figures (issue 9): PNG plots beside the tables in RESULTS_DIR.

  plots.py RESULTS_DIR
  plots.py latency WORK OUT_PNG


render-times.png  median render time per image and pose: ours (swift), pyvips, informed pyvips, Pillow, and the
                  floor (JPEGs)
e2e-latency.png   end-to-end latency p50/p95/p99 per run in e2e.json (when bench/bench-e2e.sh ran)
latency           the latency at low load (bench/bench-latency.sh): each photo's distribution, before and
                  after, from WORK's before-N.json and after-N.json
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import compare  # noqa: E402

COLOURS = {"swift": "#1b7837", "pyvips": "#762a83", "pyvips-informed": "#c2a5cf", "pillow": "#e08214",
           "floor": "#969696"}


def render_times(results):
    _, poses, _, _, _ = compare.load(results)
    keys = []
    for (image, pose, impl) in poses:
        if impl == "swift" and (image, pose) not in keys:
            keys.append((image, pose))
    if not keys:
        return None
    impls = compare.IMPLS + (["floor"] if any(impl == "floor" for (_, _, impl) in poses) else [])
    fig, ax = plt.subplots(figsize=(12, max(4, 0.28 * len(keys) * 1.2)))
    height = 0.8 / len(impls)
    for i, impl in enumerate(impls):
        # The floor exists for JPEGs only; a missing bar is a missing measurement, not zero.
        values = [poses[(im, p, impl)]["ms_median"] if (im, p, impl) in poses else float("nan") for (im, p) in keys]
        ax.barh([k + i * height for k in range(len(keys))], values, height, label=impl, color=COLOURS.get(impl))
    ax.set_yticks([k + 0.4 - height / 2 for k in range(len(keys))])
    ax.set_yticklabels([f"{im[:28]} / {p}" for (im, p) in keys], fontsize=7)
    ax.invert_yaxis()
    # Log scale: the straightforward pipeline's whole-image decodes are 10-40x the rest.
    ax.set_xscale("log")
    ax.set_xlabel("median render ms, log scale (bytes in memory -> 512x512 PNG, 1 libvips thread)")
    ax.set_title("Render time per image and pose")
    ax.legend(loc="lower right")
    fig.tight_layout()
    path = os.path.join(results, "render-times.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def e2e_latency(results):
    path = os.path.join(results, "e2e.json")
    if not os.path.exists(path):
        return None
    data = json.load(open(path))
    runs = data.get("runs") or [dict(data, name="pool width %s" % data.get("pool_width", "?"))]
    runs = [r for r in runs if r.get("latency_ms")]
    if not runs:
        return None
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / 3
    for i, p in enumerate(("p50", "p95", "p99")):
        ax.bar([k + i * width for k in range(len(runs))], [r["latency_ms"][p] for r in runs], width, label=p)
    ax.set_xticks([k + width for k in range(len(runs))])
    ax.set_xticklabels([r["name"] for r in runs], fontsize=8)
    ax.set_ylabel("end-to-end latency ms (request produced -> result consumed)")
    ax.set_yscale("log")
    ax.set_title("End-to-end latency")
    ax.legend()
    fig.tight_layout()
    out = os.path.join(results, "e2e-latency.png")
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def low_load_latency(work, out):
    """One panel per photo: the empirical distribution of produce -> result latency, before and after."""
    samples = {}  # (photo, config) -> [ms]
    for name in sorted(os.listdir(work)):
        config = name.split("-")[0]
        if config not in ("before", "after") or not name.endswith(".json"):
            continue
        for photo, entry in json.load(open(os.path.join(work, name)))["photos"].items():
            samples.setdefault((photo, config), []).extend(entry["samples_ms"])
    photos = sorted({photo for photo, _ in samples})
    fig, axes = plt.subplots(1, len(photos), figsize=(4 * len(photos), 3.6), sharey=True)
    for ax, photo in zip(axes if len(photos) > 1 else [axes], photos):
        for config, colour in (("before", "#b2182b"), ("after", "#2166ac")):
            values = sorted(samples.get((photo, config), []))
            if values:
                ax.step(values, [(i + 1) / len(values) for i in range(len(values))], where="post", color=colour,
                        label=f"{config} (n={len(values)})")
        ax.set_title(photo, fontsize=9)
        ax.set_xlabel("ms, request produced -> result consumed")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    (axes[0] if len(photos) > 1 else axes).set_ylabel("share of jobs")
    fig.suptitle("Latency at low load, one worker (before: fetch wait 500 ms, one decoding thread)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(f"bench: figure {out}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "latency":
        low_load_latency(sys.argv[2], sys.argv[3])
        return
    results = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "results")
    for path in (render_times(results), e2e_latency(results)):
        if path:
            print(f"bench: figure {path}")


if __name__ == "__main__":
    main()
