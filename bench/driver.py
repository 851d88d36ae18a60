#!/usr/bin/env python3
"""Runs the render benchmark: every image x pose mix, three implementations, one process per image each.

  driver.py --bench-bin PATH --python PATH --corpus DIR --cache DIR --out DIR [--runs N] [--concurrency N]

(pyvips-informed: shrink-on-load, crop in stored orientation, ICC, lanczos3, rotate the square,
PNG at our compression level — reference_pyvips_informed.py.)

1. Writes a job file per image with the relative pose mix (POSES below).
2. `avatar-bench plan` resolves it: the request an app would send for that image and the plan's crop
   in oriented source pixels. The Python references crop exactly that rectangle.
3. For each image, in turn: avatar-bench run, reference_pyvips.py, reference_pyvips_informed.py,
   reference_pillow.py and, for JPEGs and HEIF, the floor (bench/floor/floor.c: a libjpeg-turbo decode of
   exactly the crop region at the chosen DCT scale, or libheif decoding exactly the grid tiles the crop
   touches, + lanczos3 to 512 + PNG), each a fresh process (so each peak RSS belongs to one image), the
   same VIPS_CONCURRENCY for every libvips user; images below 20 MP then once more in reverse order
   (compare.py pools the timed runs of both). HEIF images also get "floor-whole" (the floor with libheif
   decoding the whole image: the whole-image decode the memory target compares with) and are followed by
   their baseline-JPEG twin (gen_inputs.py: the same pixels, q90), rendered in the same run.
4. All JSON lines go to OUT/raw.jsonl (plus a "machine" record); compare.py turns them into the report.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

from gen_inputs import AVIF_10BIT, make_twins, twin_name
from reference_pyvips_informed import stored_rect

HERE = os.path.dirname(os.path.abspath(__file__))

# Corpus photos (relative to the corpus) and generated phone-size photos (relative to the cache).
CORPUS_IMAGES = [
    "camera/phone_iphone-4s_8mp_orientation-6.jpg",
    "camera/phone_iphone-6-plus_8mp_gps.jpg",
    "camera/phone_samsung-galaxy-s4_9.6mp.jpg",
    "camera/phone_samsung-galaxy-s7-edge_12mp_gps.jpg",
    "camera/dslr_nikon-d3100_14mp_big-exif.jpg",
    "camera/pd_craft-beer_24mp_progressive.jpg",
    "colour/p3_displayp3-v4_craft-beer.jpg",
    "colour/adobergb_canon-t6_xmp_test.jpg",
    "orientation/Landscape_6.jpg",
    "panorama/equirect_pannellum_4096x2048.jpg",
    "formats/webp_lossy_gallery-4_1024x772.webp",
]
GENERATED_IMAGES = [
    "gen_12mp_p3_4032x3024.jpg",
    "gen_24mp_exif6_6000x4000.jpg",
    "gen_48mp_8064x6048.jpg",
]
# HEIC and AVIF (the HEIF set, `--set heif`): the corpus's iPhone files (an iPhone 7 Plus 12 MP grid of
# 512x512 tiles; iOS 18, 24 MP, 5x9 tiles of 896x640 and a tmap gain map; an 8-bit AVIF), the test
# fixture (so the set runs without the corpus) and the generated 20 MP 10-bit AVIF. Each is followed by its
# baseline-JPEG twin.
HEIF_CORPUS_IMAGES = [
    "formats/heic_iphone-7-plus_Example1.heic",
    "formats/heic_iphone-ios18_tmap-gainmap_4284x5712.heic",
    "orientation/avif_orientation-6_gps.avif",
]
HEIF_FIXTURE_IMAGES = ["formats/heic_iphone-7-plus_1008x756.heic"]
HEIF_GENERATED_IMAGES = [AVIF_10BIT]

# A realistic mix: the untouched default, a pinch close to the zoom limit panned off-centre (a face
# that is not in the middle), a moderate zoom computed by the app on its 1080 px display thumbnail,
# and a pixel rectangle (e.g. from face detection or a web client).
POSES = [
    {"name": "centred", "spec": {"kind": "centred"}},
    {"name": "zoom-max-pan", "spec": {"kind": "pose", "zoom": 0.95, "panX": 0.6, "panY": -0.5}},
    {"name": "zoom-mid-thumb", "spec": {"kind": "pose", "zoom": 0.5, "panX": -0.3, "panY": 0.3,
                                        "referenceLongEdge": 1080}},
    {"name": "rect", "spec": {"kind": "rect", "side": 0.6, "centreX": 0.45, "centreY": 0.4}},
]
SCALES = (8, 4, 2, 1)


def slug(path):
    return os.path.splitext(os.path.basename(path))[0]


def header(python, image):
    """(loader, stored width, stored height, EXIF orientation) from the file's header."""
    out = subprocess.run([python, "-c", "import pyvips, sys; i = pyvips.Image.new_from_file(sys.argv[1]); "
                          "o = i.get('orientation') if i.get_typeof('orientation') else 1; "
                          "print(i.get('vips-loader'), i.width, i.height, o)", image],
                         capture_output=True, text=True, check=True)
    loader, width, height, orientation = out.stdout.split()
    orientation = int(orientation)
    return loader, int(width), int(height), orientation if 1 <= orientation <= 8 else 1


def heif_images(corpus, fixtures, cache):
    """The HEIF set's paths that exist (the corpus may be absent)."""
    paths = [os.path.join(corpus, p) for p in HEIF_CORPUS_IMAGES] + \
        [os.path.join(fixtures, p) for p in HEIF_FIXTURE_IMAGES] + \
        [os.path.join(cache, p) for p in HEIF_GENERATED_IMAGES]
    return [os.path.abspath(p) for p in paths if os.path.exists(p)]


def heif_floor_regions(poses):
    """The floor's HEIF lines: the plan's crop in ORIENTED pixels (floor.c maps it through irot/imir)."""
    return "".join(f"{p['name']} 1 {p['crop']['x']} {p['crop']['y']} {p['crop']['side']} {p['crop']['side']}\n"
                   for p in poses)


def floor_regions(poses, width, height, orientation, size):
    """One `NAME SCALE X Y W H` line per pose for bench/floor: the plan's crop (oriented pixels) mapped
    into stored orientation, on the grid of the DCT scale the renderer picks (ShrinkOnLoad: the largest
    of 8, 4, 2, 1 that keeps the crop >= the output size), as CropPipeline.storedCrop places it."""
    lines = []
    for pose in poses:
        crop = pose["crop"]
        sx, sy, side = stored_rect(orientation, crop["x"], crop["y"], crop["side"], width, height)
        scale = next(f for f in SCALES if crop["side"] / f >= size or f == 1)
        dw, dh = -(-width // scale), -(-height // scale)  # libjpeg rounds up
        s = max(1, min(round(side * min(dw / width, dh / height)), dw, dh))
        x = min(max(round(sx * dw / width), 0), dw - s)
        y = min(max(round(sy * dh / height), 0), dh - s)
        lines.append(f"{pose['name']} {scale} {x} {y} {s} {s}\n")
    return "".join(lines)


def machine_record(args):
    def read(path):
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""
    cpu = next((line.split(":", 1)[1].strip() for line in read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor())
    mem_kib = next((int(line.split()[1]) for line in read("/proc/meminfo").splitlines()
                    if line.startswith("MemTotal:")), 0)
    versions = subprocess.run(
        [args.python, "-c", "import pyvips, PIL; print(pyvips.__version__, "
         "'%d.%d.%d' % (pyvips.version(0), pyvips.version(1), pyvips.version(2)), PIL.__version__)"],
        capture_output=True, text=True, check=True).stdout.split()
    swift = subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout.splitlines()
    return {"type": "machine", "nproc": os.cpu_count(), "cpu": cpu, "mem_gib": round(mem_kib / 1024 / 1024, 1),
            "kernel": platform.release(), "pyvips": versions[0], "libvips": versions[1], "pillow": versions[2],
            "swift": swift[0] if swift else "", "concurrency": args.concurrency, "runs": args.runs,
            "large_runs": args.large_runs, "date": time.strftime("%Y-%m-%d %H:%M %Z")}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench-bin", required=True)
    parser.add_argument("--floor-bin", help="bench/floor/floor.c, built; JPEG images get a floor measurement")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--corpus", required=True, help="may be absent: the HEIF set then runs on the fixture")
    parser.add_argument("--fixtures", default=os.path.join(HERE, "..", "Tests", "Fixtures"))
    parser.add_argument("--set", choices=["all", "heif"], default="all",
                        help="heif: only the HEIC/AVIF images and their JPEG twins")
    parser.add_argument("--cache", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=3,
                        help="timed renders per pose and process (after one warm-up); two processes below 20 MP")
    parser.add_argument("--large-runs", type=int, default=3, help="timed renders per pose for images >= 20 MP")
    parser.add_argument("--concurrency", type=int, default=1, help="libvips threads (Swift and pyvips)")
    parser.add_argument("--only", help="substring filter on image paths")
    args = parser.parse_args()

    jobs_dir = os.path.join(args.out, "jobs")
    out_dir = os.path.join(args.out, "out")
    os.makedirs(jobs_dir, exist_ok=True)
    os.makedirs(out_dir, exist_ok=True)
    env = dict(os.environ, VIPS_CONCURRENCY=str(args.concurrency))
    images = [] if args.set == "heif" else \
        [os.path.abspath(os.path.join(args.corpus, p)) for p in CORPUS_IMAGES] + \
        [os.path.abspath(os.path.join(args.cache, p)) for p in GENERATED_IMAGES]
    images = [p for p in images if os.path.exists(p)]
    heif = heif_images(args.corpus, args.fixtures, args.cache)
    make_twins(heif, args.cache)
    for image in heif:
        images += [image, os.path.abspath(os.path.join(args.cache, twin_name(image)))]
    if args.only:
        images = [p for p in images if args.only in p]

    raw_path = os.path.join(args.out, "raw.jsonl")
    started = time.time()
    with open(raw_path, "w") as raw:
        raw.write(json.dumps(machine_record(args)) + "\n")
        for image in images:
            name = slug(image)
            loader, width, height, orientation = header(args.python, image)
            large = width * height >= 20_000_000
            runs = args.large_runs if large else args.runs
            job = {"image": image, "runs": runs, "warmup": 1, "output": 512, "poses": POSES}
            job_path = os.path.join(jobs_dir, name + ".json")
            with open(job_path, "w") as f:
                json.dump(job, f)
            planned = subprocess.run([args.bench_bin, "plan", "--job", job_path], env=env, check=True,
                                     capture_output=True, text=True).stdout
            with open(job_path, "w") as f:
                f.write(planned)
            save = os.path.join(out_dir, name)
            os.makedirs(save, exist_ok=True)
            commands = [
                ("swift", [args.bench_bin, "run", "--job", job_path, "--concurrency", str(args.concurrency),
                           "--save", save], None),
                ("pyvips", [args.python, os.path.join(HERE, "reference_pyvips.py"), "--job", job_path,
                            "--save", save], None),
                ("pyvips-informed", [args.python, os.path.join(HERE, "reference_pyvips_informed.py"), "--job",
                                     job_path, "--save", save], None),
                ("pillow", [args.python, os.path.join(HERE, "reference_pillow.py"), "--job", job_path,
                            "--save", save], None),
            ]
            if os.path.basename(image).startswith("jpeg-twin_"):
                commands = commands[:1]  # the twin is there for our own render of the same photo as a JPEG
            floor = [args.floor_bin, image, "512", "1", str(runs)]
            if args.floor_bin and loader.startswith("jpegload"):
                regions = floor_regions(json.loads(planned)["poses"], width, height, orientation, 512)
                commands.append(("floor", floor, regions))
            if args.floor_bin and loader.startswith("heifload"):
                regions = heif_floor_regions(json.loads(planned)["poses"])
                commands.append(("floor", floor, regions))
                commands.append(("floor-whole", ["env", "FLOOR_HEIF_WHOLE=1"] + floor, regions))
            # Smaller images, where the pipelines are closest, run twice in mirrored order (A B C, C B A)
            # so that a change in the machine's load during the run weighs on all three alike.
            if not large:
                commands += list(reversed(commands))
            for impl, command, stdin in commands:
                t0 = time.time()
                result = subprocess.run(command, env=env, input=stdin, capture_output=True, text=True)
                if result.returncode != 0:
                    sys.stderr.write(f"bench: {impl} failed on {name}:\n{result.stderr}\n")
                    raw.write(json.dumps({"type": "error", "impl": impl, "image": image,
                                          "stderr": result.stderr[-2000:]}) + "\n")
                    continue
                raw.write(result.stdout)
                raw.flush()
                print(f"bench: {name:<40} {impl:<15} {time.time() - t0:6.1f} s", flush=True)
    print(f"bench: {len(images)} images in {time.time() - started:.0f} s -> {raw_path}", flush=True)


if __name__ == "__main__":
    main()
