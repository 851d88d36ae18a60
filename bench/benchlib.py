"""Shared by the Python reference renderers: job file, timing loop, RSS from /proc and JSON lines; and by the
scripts that drive avatar-bench on one pose (tiles.py, ab.py): planning such a job and reading its run.

Job file (written by driver.py, one per image; the same file avatar-bench reads):
  {"image": PATH, "runs": N, "warmup": 1, "output": 512,
   "poses": [{"name": "...", "input": {...}, "crop": {"x":..,"y":..,"side":..}}, ...]}
`crop` is the plan's crop in ORIENTED source pixels, printed by `avatar-bench plan`.
"""
import json
import os
import statistics
import subprocess
import sys
import time


def proc_status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field + " missing from /proc/self/status")


def emit(record):
    sys.stdout.write(json.dumps(record, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def run(impl, render, job_path, save_dir=None):
    """Baseline RSS is taken after the libraries are loaded and initialised, before the image is read.
    Each pose: `warmup` discarded renders, then `runs` timed ones (bytes in memory -> PNG bytes)."""
    baseline_kib = proc_status_kib("VmRSS")
    with open(job_path) as f:
        job = json.load(f)
    with open(job["image"], "rb") as f:
        data = f.read()
    size = job.get("output", 512)
    for pose in job["poses"]:
        crop = pose["crop"]
        times = []
        out = None
        for i in range(job.get("warmup", 1) + job["runs"]):
            t0 = time.perf_counter()
            out = render(data, crop["x"], crop["y"], crop["side"], size)
            ms = (time.perf_counter() - t0) * 1000
            if i >= job.get("warmup", 1):
                times.append(ms)
        if save_dir:
            with open(f"{save_dir}/{pose['name']}.{impl}.png", "wb") as f:
                f.write(out)
        emit({"type": "pose", "impl": impl, "image": job["image"], "pose": pose["name"],
              "crop": crop, "ms": times, "ms_median": statistics.median(times),
              "output_bytes": len(out)})
    emit({"type": "image", "impl": impl, "image": job["image"],
          "baseline_mb": baseline_kib / 1024, "peak_mb": proc_status_kib("VmHWM") / 1024,
          "peak_above_baseline_mb": (proc_status_kib("VmHWM") - baseline_kib) / 1024})


def plan_one_pose(binary, image, pose, runs, job_path):
    """Writes a job of one pose (`{"name": ..., "spec": ...}`) on `image` to `job_path`, as `avatar-bench plan` (the
    `binary`) completes it with the crop, for `runs` timed renders after one warm-up."""
    with open(job_path, "w") as f:
        json.dump({"image": os.path.abspath(image), "runs": runs, "warmup": 1, "output": 512, "poses": [pose]}, f)
    planned = subprocess.run([binary, "plan", "--job", job_path], check=True, capture_output=True, text=True).stdout
    with open(job_path, "w") as f:
        f.write(planned)


def run_one_pose(command, job_path):
    """`avatar-bench run` of a one-pose job (`command`: the binary, with any prefix before and flags after, as
    `command(job_path)` builds it): the pose's record and the peak MB above the process's baseline."""
    lines = subprocess.run(command(job_path), check=True, capture_output=True, text=True).stdout.splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    pose = next(r for r in records if r["type"] == "pose")
    peak = next(r for r in records if r["type"] == "image")["peak_above_baseline_mb"]
    return pose, peak
