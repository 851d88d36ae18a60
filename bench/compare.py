#!/usr/bin/env python3
"""Turns bench/results/raw.jsonl (driver.py) into the report: a table per image and pose, the targets
with PASS/FAIL, and bench/results/latest.md.

  compare.py RESULTS_DIR

Targets (the issue's words):
  speed vs pyvips   Swift <= 0.8x the pyvips pipeline's time over the pose mix (checked both as the
                    geometric mean of the per-pose ratios and as the ratio of summed medians), and never
                    slower on any pose (every per-pose ratio <= 1).
  vs informed      Swift <= 0.5x the informed pyvips pipeline (shrink=, crop, ICC, lanczos3, PNG level 1),
                    geometric mean over the pose mix, and never above 1.0x on any pose (issue 10).
  vs the floor      Swift within 1.25x of the floor (bench/floor/floor.c: a libjpeg-turbo decode of exactly the
                    crop region at the chosen DCT scale + lanczos3 to 512 + PNG, nothing else), geometric mean
                    over the JPEG poses (issue 10); the worst pose and the decode-only floor are reported too.
  speed vs Pillow   >= 2.5x faster (issue 10; was 2x) on the median (median over all poses of Pillow ms / Swift ms).
  memory            24 MP EXIF-6 portrait: Swift's peak RSS above its baseline <= 1/3 of the pyvips
                    (rotate-then-crop) pipeline's.
HEIF targets (issue 15), over the HEIC/AVIF images of driver.py (not counted in the targets above):
  vs informed      Swift <= 0.35x the informed pyvips pipeline (heifload on the same libheif -> crop -> ICC ->
                    lanczos3 -> PNG at our level), geometric mean over the HEIC poses; never above 1.0x on any.
  vs the JPEG twin  <= 4x our own render of the same photo saved as a baseline JPEG (q90, same pixels),
                    geometric mean over the HEIC poses, measured in the same run.
  vs the floor      within 1.25x of the HEIF floor (libheif decoding exactly the tiles the crop touches +
                    lanczos3 + PNG), geometric mean over the HEIC poses.
  memory            iOS 18 24 MP HEIC: Swift's peak above baseline <= 1/3 of a whole-image decode (the floor
                    with FLOOR_HEIF_WHOLE=1: libheif decoding every tile).
  renders           every iOS 18 HEIC renders every pose.
Also reported: how far each output is from the Swift one (mean absolute difference per 8-bit sample,
same 512x512 crop), to show the three implementations rendered the same square.
"""
import json
import math
import os
import statistics
import sys

IMPLS = ["swift", "pyvips", "pyvips-informed", "pillow"]
MEMORY_IMAGE = "gen_24mp_exif6_6000x4000"
HEIF_EXTENSIONS = (".heic", ".heif", ".avif")
TWIN_PREFIX = "jpeg-twin_"  # gen_inputs.twin_name
IOS18_MARK = "ios18"


def is_twin(image):
    return image.startswith(TWIN_PREFIX)


def slug(path):
    return os.path.splitext(os.path.basename(path))[0]


def load(results):
    machine, poses, images, errors = {}, {}, {}, []
    heif = {}  # slug -> extension, for the HEIF images
    with open(os.path.join(results, "raw.jsonl")) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            if r["type"] == "machine":
                machine = r
            elif r["type"] == "pose":
                if r["image"].lower().endswith(HEIF_EXTENSIONS):
                    heif[slug(r["image"])] = os.path.splitext(r["image"])[1].lower()
                # A second process for the same image (mirrored pass): pool its timed runs.
                key = (slug(r["image"]), r["pose"], r["impl"])
                if key in poses:
                    r["ms"] = poses[key]["ms"] + r["ms"]
                    r["stages_ms"] = poses[key].get("stages_ms")
                    if "decode_ms" in r:
                        r["decode_ms"] = poses[key]["decode_ms"] + r["decode_ms"]
                r["ms_median"] = statistics.median(r["ms"])
                if "decode_ms" in r:
                    r["decode_ms_median"] = statistics.median(r["decode_ms"])
                poses[key] = r
            elif r["type"] == "image":
                # Peak of the worst process.
                key = (slug(r["image"]), r["impl"])
                if key not in images or r["peak_above_baseline_mb"] > images[key]["peak_above_baseline_mb"]:
                    images[key] = r
            elif r["type"] == "error":
                errors.append(r)
    return machine, poses, images, errors, heif


def output_difference(results, image, pose, impl):
    """Mean absolute difference per sample between IMPL's avatar and Swift's (None if unavailable)."""
    try:
        import pyvips
    except ImportError:
        return None
    directory = os.path.join(results, "out", image)
    try:
        a = pyvips.Image.new_from_file(os.path.join(directory, f"{pose}.swift.png"))
        b = pyvips.Image.new_from_file(os.path.join(directory, f"{pose}.{impl}.png"))
    except pyvips.Error:
        return None
    if (a.width, a.height, a.bands) != (b.width, b.height, b.bands):
        return float("inf")
    return (a.cast("int") - b.cast("int")).abs().avg()


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def report(results):
    machine, poses, images, errors, heif = load(results)
    lines = []
    out = lines.append
    image_order, heif_order = [], []
    for (image, _, _) in poses:
        order = heif_order if image in heif or is_twin(image) else image_order
        if image not in order:
            order.append(image)

    out("## Render benchmark: avatar-bench (Swift, libvips) vs pyvips pipeline vs Pillow")
    out("")
    if machine:
        out(f"- Machine: {machine['nproc']} cores, {machine['cpu']}, {machine['mem_gib']} GiB RAM, "
            f"Linux {machine['kernel']}")
        out(f"- libvips {machine['libvips']} (Swift and pyvips {machine['pyvips']}), Pillow {machine['pillow']}, "
            f"{machine['swift']}")
        out(f"- libvips threads: VIPS_CONCURRENCY={machine['concurrency']} for both libvips users; operation "
            f"cache off in both. Pillow is single-threaded.")
        out(f"- Per pose and process: 1 warm-up + {machine['runs']} timed renders ({machine['large_runs']} for images "
            f">= 20 MP); bytes in memory -> 512x512 PNG. A fresh process per image and implementation; images "
            f"< 20 MP twice, in mirrored order (swift, pyvips, pillow, pillow, pyvips, swift), timed runs pooled. "
            f"ms = median; peak = VmHWM at the end minus VmRSS after initialisation (worst process). "
            f"Run {machine['date']}.")
        out("")

    if image_order:
        jpeg_report(results, poses, images, image_order, out)
    heif_report(results, poses, images, heif, heif_order, out)
    for e in errors:
        out(f"- ERROR {e['impl']} on {slug(e['image'])}: {e['stderr'].strip().splitlines()[-1:]}")
    return "\n".join(lines) + "\n"


def jpeg_report(results, poses, images, image_order, out):
    """The JPEG/WebP table, peak memory and targets (the HEIF set has its own: heif_report)."""
    ratios_pyvips, ratios_pillow, ratios_informed = [], [], []
    sums = {impl: 0.0 for impl in IMPLS}
    swift_ms, pillow_ms = [], []
    slower = []
    by_kind = {}
    ratios_floor = []
    out("| image | pose | crop side | shrink | decoder | swift ms | (render + encode) | pyvips ms | informed ms "
        "| pillow ms | floor ms (decode) | swift/pyvips | swift/informed | pillow/swift | swift/floor "
        "| diff pyvips | diff informed | diff pillow |")
    out("|---|---|---:|---:|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for image in image_order:
        for pose in [p for (i, p, impl) in poses if i == image and impl == "swift"]:
            rec = {impl: poses.get((image, pose, impl)) for impl in IMPLS}
            if not all(rec.values()):
                continue
            ms = {impl: rec[impl]["ms_median"] for impl in IMPLS}
            rp = ms["swift"] / ms["pyvips"]
            rl = ms["pillow"] / ms["swift"]
            ri = ms["swift"] / ms["pyvips-informed"]
            ratios_informed.append(ri)
            ratios_pyvips.append(rp)
            ratios_pillow.append(rl)
            swift_ms.append(ms["swift"])
            pillow_ms.append(ms["pillow"])
            for impl in IMPLS:
                sums[impl] += ms[impl]
            by_kind.setdefault(pose, []).append(rp)
            if rp > 1:
                spread = lambda r: f"{min(r['ms']):.0f}-{max(r['ms']):.0f}"
                slower.append(f"{image}/{pose} {rp:.2f}x (shrink {rec['swift'].get('shrink', '?')}; runs "
                              f"swift {spread(rec['swift'])} ms, pyvips {spread(rec['pyvips'])} ms)")
            dv = output_difference(results, image, pose, "pyvips")
            dl = output_difference(results, image, pose, "pillow")
            di = output_difference(results, image, pose, "pyvips-informed")
            fmt = lambda d: "-" if d is None else f"{d:.2f}"
            stages = rec["swift"].get("stages_ms") or {}
            split = f"{stages.get('render', 0):.0f} + {stages.get('encode', 0):.0f}"
            floor = poses.get((image, pose, "floor"))
            floor_cell, floor_ratio = "-", "-"
            if floor:
                rf = ms["swift"] / floor["ms_median"]
                ratios_floor.append((rf, f"{image}/{pose}", rec["swift"].get("decoder", "?")))
                floor_cell = f"{floor['ms_median']:.1f} ({floor['decode_ms_median']:.1f})"
                floor_ratio = f"{rf:.2f}"
            out(f"| {image} | {pose} | {rec['swift']['crop']['side']} | {rec['swift'].get('shrink', '')} "
                f"| {rec['swift'].get('decoder', '-')} "
                f"| {ms['swift']:.1f} | {split} | {ms['pyvips']:.1f} | {ms['pyvips-informed']:.1f} | {ms['pillow']:.1f} "
                f"| {floor_cell} | {rp:.2f} | {ri:.2f} | {rl:.2f} | {floor_ratio} | {fmt(dv)} | {fmt(di)} | {fmt(dl)} |")
    out("")
    out("Peak RSS above the process baseline, MB (one process per image: all poses, warm-up and timed runs):")
    out("")
    out("| image | swift | pyvips | informed | pillow | swift/pyvips | baseline MB swift / pyvips / informed / pillow |")
    out("|---|---:|---:|---:|---:|---:|---|")
    for image in image_order:
        rec = {impl: images.get((image, impl)) for impl in IMPLS}
        if not all(rec.values()):
            continue
        peak = {impl: rec[impl]["peak_above_baseline_mb"] for impl in IMPLS}
        base = " / ".join(f"{rec[impl]['baseline_mb']:.0f}" for impl in IMPLS)
        out(f"| {image} | {peak['swift']:.1f} | {peak['pyvips']:.1f} | {peak['pyvips-informed']:.1f} "
            f"| {peak['pillow']:.1f} "
            f"| {peak['swift'] / peak['pyvips']:.2f} | {base} |")
    out("")

    verdict = lambda ok: "PASS" if ok else "FAIL"
    gm = geomean(ratios_pyvips)
    total = sums["swift"] / sums["pyvips"] if sums["pyvips"] else float("nan")
    worst = max(ratios_pyvips) if ratios_pyvips else float("nan")
    med_ratio = statistics.median(ratios_pillow) if ratios_pillow else float("nan")
    med_of_ms = statistics.median(pillow_ms) / statistics.median(swift_ms) if swift_ms else float("nan")
    out("### Targets")
    out("")
    out(f"- {verdict(gm <= 0.8 and total <= 0.8)} time vs pyvips over the pose mix <= 0.8x: geometric mean of "
        f"per-pose ratios {gm:.3f}x, summed medians {sums['swift']:.0f} / {sums['pyvips']:.0f} ms = {total:.2f}x "
        f"({len(ratios_pyvips)} poses)")
    out(f"- {verdict(worst <= 1.0)} never slower than pyvips on any pose (every image x pose): worst ratio "
        f"{worst:.3f}x" + (f"; slower on: {'; '.join(slower)}" if slower else ""))
    gi = geomean(ratios_informed)
    worst_i = max(ratios_informed) if ratios_informed else float("nan")
    out(f"- {verdict(gi <= 0.5)} time vs the informed pyvips pipeline <= 0.5x (geometric mean over the pose mix): "
        f"{gi:.3f}x")
    out(f"- {verdict(worst_i <= 1.0)} never above 1.0x the informed pipeline on any pose: worst {worst_i:.3f}x")
    if ratios_floor:
        gf = geomean([r for r, _, _ in ratios_floor])
        worst_f = max(ratios_floor)
        region = [r for r, _, decoder in ratios_floor if decoder.startswith("jpeg-region")]
        region_text = (f"; on the poses the region decoder rendered {geomean(region):.3f}x ({len(region)} poses)"
                       if region else "")
        out(f"- {verdict(gf <= 1.25)} within 1.25x of the floor (libjpeg-turbo region decode + resize + PNG), "
            f"geometric mean over {len(ratios_floor)} JPEG poses: {gf:.3f}x; worst {worst_f[0]:.2f}x "
            f"({worst_f[1]}, decoder {worst_f[2]}){region_text}")
    else:
        out("- FAIL within 1.25x of the floor: no floor measurements (bench/floor not built?)")
    kinds = ", ".join(f"{kind} {geomean(r):.2f}x (worst {max(r):.2f}x)" for kind, r in by_kind.items())
    worst_kind = max((geomean(r) for r in by_kind.values()), default=float("nan"))
    out(f"- {verdict(worst_kind <= 1.0)} never slower than pyvips on any pose of the mix (geometric mean over the "
        f"images): {kinds}")
    out(f"- {verdict(med_ratio >= 2.5)} >= 2.5x faster than Pillow on the median (median of the per-pose speed-ups "
        f"Pillow/Swift): {med_ratio:.3f}x; {sum(r >= 2.5 for r in ratios_pillow)} of {len(ratios_pillow)} poses "
        f"reach 2.5x")
    out(f"- {verdict(med_of_ms >= 2.5)} >= 2.5x faster than Pillow on the median (median render time): Pillow "
        f"{statistics.median(pillow_ms):.1f} ms / Swift {statistics.median(swift_ms):.1f} ms = {med_of_ms:.3f}x")
    mem = {impl: images.get((MEMORY_IMAGE, impl)) for impl in IMPLS}
    if mem["swift"] and mem["pyvips"]:
        s, p = mem["swift"]["peak_above_baseline_mb"], mem["pyvips"]["peak_above_baseline_mb"]
        pillow = f" (Pillow {mem['pillow']['peak_above_baseline_mb']:.1f} MB)" if mem["pillow"] else ""
        out(f"- {verdict(s <= p / 3)} 24 MP EXIF-6 portrait, peak RSS above baseline <= 1/3 of rotate-then-crop: "
            f"Swift {s:.1f} MB vs pyvips {p:.1f} MB = {s / p:.3f}x{pillow}")
    else:
        out(f"- FAIL memory target: no result for {MEMORY_IMAGE}")


def heif_report(results, poses, images, heif, heif_order, out):
    """The HEIC/AVIF table, peak memory and the issue-15 targets."""
    heif_images = [i for i in heif_order if i in heif]
    if not heif_images:
        return
    verdict = lambda ok: "PASS" if ok else "FAIL"
    ms = lambda image, pose, impl: (poses.get((image, pose, impl)) or {}).get("ms_median")
    cell = lambda v: "-" if v is None else f"{v:.1f}"
    ratio = lambda a, b: None if a is None or b is None else a / b
    fmt = lambda d: "-" if d is None else f"{d:.2f}"
    out("")
    out("### HEIC and AVIF")
    out("")
    out("| image | pose | crop side | decoder | swift ms | (render + encode) | informed ms | pyvips ms | pillow ms "
        "| floor ms (decode) | floor-whole ms | JPEG twin ms | swift/informed | swift/floor | swift/twin "
        "| pillow/swift | diff informed | diff pillow |")
    out("|---|---|---:|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    heic = {"informed": [], "floor": [], "twin": []}
    avif = {"informed": [], "twin": []}
    unrendered = []
    for image in heif_images:
        twin = TWIN_PREFIX + image
        target = avif if heif[image] == ".avif" else heic
        for pose in dict.fromkeys(p for (i, p, impl) in poses if i == image and impl in IMPLS):
            swift = poses.get((image, pose, "swift"))
            if not swift:
                unrendered.append(f"{image}/{pose}")
                continue
            s = swift["ms_median"]
            floor = poses.get((image, pose, "floor"))
            ri, rf, rt = ratio(s, ms(image, pose, "pyvips-informed")), ratio(s, ms(image, pose, "floor")), \
                ratio(s, ms(twin, pose, "swift"))
            for key, value in (("informed", ri), ("floor", rf), ("twin", rt)):
                if value is not None and key in target:
                    target[key].append((value, f"{image}/{pose}"))
            stages = swift.get("stages_ms") or {}
            floor_cell = "-" if not floor else f"{floor['ms_median']:.1f} ({floor['decode_ms_median']:.1f})"
            out(f"| {image} | {pose} | {swift['crop']['side']} | {swift.get('decoder', '-')} | {s:.1f} "
                f"| {stages.get('render', 0):.0f} + {stages.get('encode', 0):.0f} "
                f"| {cell(ms(image, pose, 'pyvips-informed'))} | {cell(ms(image, pose, 'pyvips'))} "
                f"| {cell(ms(image, pose, 'pillow'))} | {floor_cell} | {cell(ms(image, pose, 'floor-whole'))} "
                f"| {cell(ms(twin, pose, 'swift'))} | {fmt(ri)} | {fmt(rf)} | {fmt(rt)} "
                f"| {fmt(ratio(ms(image, pose, 'pillow'), s))} "
                f"| {fmt(output_difference(results, image, pose, 'pyvips-informed'))} "
                f"| {fmt(output_difference(results, image, pose, 'pillow'))} |")
    out("")
    out("Peak RSS above the process baseline, MB (HEIF; floor-whole: libheif decoding the whole image):")
    out("")
    heif_impls = IMPLS + ["floor", "floor-whole"]
    out("| image | " + " | ".join(heif_impls) + " | swift/floor-whole |")
    out("|---|" + "---:|" * (len(heif_impls) + 1))
    for image in heif_images:
        peak = {impl: (images.get((image, impl)) or {}).get("peak_above_baseline_mb") for impl in heif_impls}
        out(f"| {image} | " + " | ".join(cell(peak[impl]) for impl in heif_impls)
            + f" | {fmt(ratio(peak['swift'], peak['floor-whole']))} |")
    out("")
    out("#### HEIF targets")
    out("")

    def summary(pairs):
        values = [v for v, _ in pairs]
        worst = max(pairs) if pairs else (float("nan"), "-")
        return geomean(values), worst, len(values)

    gi, worst_i, n = summary(heic["informed"])
    out(f"- {verdict(gi <= 0.35)} HEIC time vs the informed pyvips pipeline <= 0.35x (geometric mean over {n} "
        f"HEIC poses): {gi:.3f}x")
    out(f"- {verdict(worst_i[0] <= 1.0)} never above 1.0x the informed pipeline on any HEIC pose: worst "
        f"{worst_i[0]:.3f}x ({worst_i[1]})")
    gt, worst_t, n = summary(heic["twin"])
    out(f"- {verdict(gt <= 4.0)} HEIC <= 4x our render of the same photo as a baseline JPEG (geometric mean over {n} "
        f"poses): {gt:.2f}x; worst {worst_t[0]:.2f}x ({worst_t[1]})")
    gf, worst_f, n = summary(heic["floor"])
    out(f"- {verdict(gf <= 1.25)} HEIC within 1.25x of the HEIF floor (libheif decoding the crop's tiles + resize + "
        f"PNG; geometric mean over {n} poses): {gf:.3f}x; worst {worst_f[0]:.2f}x ({worst_f[1]})")
    ios18 = [i for i in heif_images if IOS18_MARK in i]
    for image in ios18:
        s = (images.get((image, "swift")) or {}).get("peak_above_baseline_mb")
        w = (images.get((image, "floor-whole")) or {}).get("peak_above_baseline_mb")
        informed = (images.get((image, "pyvips-informed")) or {}).get("peak_above_baseline_mb")
        if s is None or w is None:
            out(f"- FAIL memory ({image}): no Swift or whole-image-decode result")
            continue
        out(f"- {verdict(s <= w / 3)} {image}: peak RSS above baseline <= 1/3 of a whole-image decode: Swift "
            f"{s:.1f} MB vs {w:.1f} MB = {s / w:.3f}x (informed pyvips {cell(informed)} MB)")
    if ios18:
        missing = [u for u in unrendered if IOS18_MARK in u]
        out(f"- {verdict(not missing)} every iOS 18 HEIC renders every pose ({len(ios18)} files)"
            + (f"; not rendered: {', '.join(missing)}" if missing else ""))
    else:
        out("- (no iOS 18 HEIC in this run: it is in the corpus, absent or filtered out)")
    if avif["informed"]:
        ga, worst_a, n = summary(avif["informed"])
        gat, _, _ = summary(avif["twin"])
        out(f"- (AVIF, no target) vs the informed pipeline {ga:.3f}x over {n} poses, worst {worst_a[0]:.2f}x "
            f"({worst_a[1]}); vs the JPEG twin {gat:.2f}x")


def main():
    results = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "results")
    text = report(results)
    sys.stdout.write(text)
    with open(os.path.join(results, "latest.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
