#!/usr/bin/env python3
"""`make chaos`: the real stack under faults, with the worker's promises checked at the end.

Two worker processes of one consumer group take a few thousand crop requests from a Python
producer: ordinary photos, hostile files (truncated, zero-byte, HTML, a header-only bomb, a
truncated SVGZ, an oversized object, a missing one, the repo's hostile fixtures), duplicates,
requests of one user sent out of order and under different keys, malformed messages, and uploads
that crash (SIGSEGV, SIGKILL, abort), hang or exhaust the memory of the render helper that decodes
them (the test-only markers act inside the helper): each must fail only its own job, on its first
render, with its code, and no worker may die of one. Beside them go mutations of real photos (byte
flips, box sizes and lengths overwritten, truncations: an iPhone HEIC, a JPEG, the corpus' iOS 18
HEIC when present) and the fuzz harnesses' regression inputs and, after a long `make fuzz`, a
sample of their corpus: any outcome but a lost job or a dead worker. While they run, the workers are killed
with SIGKILL (a supervisor restarts them, as an orchestrator would), Postgres is restarted, the
broker (Tansu on its s3:// engine, which keeps its log) is killed and restarted, and the object
store is stopped for a while. A few users are forgotten by forget requests mixed into the stream,
and a few more with `avatar-cropper forget` while their jobs run and while the faults are injected;
the ledger is pruned all along (every few seconds the rows' and the forget tombstones' clocks are
moved past the retention and `avatar-cropper prune` runs; the workers prune on their own schedule
too). Then the DLQ is replayed, and every DLQ record of every forgotten user with it.

A third of the photo requests ask for several formats (CHAOS_FORMATS, default png,webp,avif, for the avatar;
WebP for a 96 px extra size; docs/FORMATS.md); every object of every current version is then checked: a file of
its key's format at its key's size, the same bytes as its version's own copy, and no EXIF, XMP or IPTC.

It prints and asserts: jobs produced, jobs with a result, lost jobs (0), jobs still failed
transiently after replay (0), double version bumps (0), published avatars whose bytes are not
those of the version Postgres names (0), stale overwrites (0), stuck partitions (0), and the
time to finish; and for every forgotten user, nothing left anywhere (every object of the bucket
listed, every table of the schema queried; the tombstones apart). Version
bumps and stale overwrites are judged from the result events (the ledger is pruned), each applied
version owned by exactly one job. Exit status 0 only when every check holds.

Usage: chaos.py --bin DIR --run DIR [--jobs N] [--seed N]      (scripts/chaos.sh sets it up)
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import random
import re
import signal
import struct
import subprocess
import sys
import threading
import urllib.parse
import time
import uuid
import zlib
import faulthandler

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
sys.path.insert(0, os.path.join(root, "proto", "python"))

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from avatar.crop.v1 import common_pb2, crop_request_pb2, crop_result_pb2  # noqa: E402

REQUESTS, RESULTS, DLQ = "chaos.crop.requests", "chaos.crop.results", "chaos.crop.dlq"
GROUP = "chaos-workers"
PARTITIONS = 6
TRANSIENT = {"STORAGE_UNAVAILABLE", "DATABASE_UNAVAILABLE", "TIMEOUT", "OUT_OF_MEMORY", "INTERNAL"}
# Uploads that attack the render helper (RenderTestSeams markers), each with the code its job must end with: a
# crash is DECODE_FAILED on the first render (the worker lives on), a hang is killed at the deadline, an
# allocation past the helper's memory cap is OUT_OF_MEMORY.
CONTAINED = {
    "crash-abort.jpg": (b"AVATAR-TEST-ABORT", "DECODE_FAILED"),
    "crash-segv.jpg": (b"AVATAR-TEST-SIGNAL=SEGV", "DECODE_FAILED"),
    "crash-kill.jpg": (b"AVATAR-TEST-SIGNAL=KILL", "DECODE_FAILED"),
    "hang.jpg": (b"AVATAR-TEST-SLEEP-MS=120000", "TIMEOUT"),
    "memory-bomb.jpg": (b"AVATAR-TEST-ALLOCATE-MB=16384", "OUT_OF_MEMORY"),
    # Refused inside GLib, whose own answer is to abort: still out of memory, not a crash.
    "memory-bomb-glib.jpg": (b"AVATAR-TEST-GLIB-ALLOCATE-MB=16384", "OUT_OF_MEMORY"),
}
# Mutations of real photos sent once each (sandboxed-render issue: 600 such mutations once killed the worker).
MUTATIONS = 48
# Fuzz corpus inputs (after `make fuzz`) sent once each, beside the regression inputs.
FUZZ_CORPUS_SAMPLE = 24
# The fuzz harnesses' inputs start with this many bytes of crop parameters (Tests/Fuzz/fuzz_parameters.h).
FUZZ_PARAMETER_BYTES = 8
# A mutation's file may hang its decoder or exhaust its memory cap: those codes are its own, not a fault's.
MUTATED_OWN_TRANSIENT = {"TIMEOUT", "OUT_OF_MEMORY"}
# The attack that hangs its render until the deadline (sent apart from the others).
HANG = "hang.jpg"
# The workers' job deadline: a hang costs one render slot this long (at 20 s, ordinary jobs timed out on a
# machine loaded far beyond its cores).
JOB_TIMEOUT_SECONDS = 40


def log(message):
    print(f"[chaos {time.strftime('%H:%M:%S')}] {message}", flush=True)


def load_env(path):
    env = {}
    for line in open(path):
        match = re.match(r"export (\w+)='(.*)'", line.strip())
        if match:
            env[match.group(1)] = match.group(2)
    return env


# MARK: - Sources


def make_sources(work):
    """Returns {name: (bytes, kind, expected codes or None)}: photos the worker renders, and hostile files it must
    refuse with a permanent code."""
    import pyvips

    def photo(width, height, seed, fmt, **save):
        noise = pyvips.Image.gaussnoise(width // 8, height // 8, sigma=40, mean=128, seed=seed)
        rgb = noise.bandjoin([noise.rot180().resize(1.0), noise.flip("horizontal")]).cast("uchar")
        image = rgb.resize(8, kernel="linear").copy(interpretation="srgb")
        return image, image.write_to_buffer(fmt, **save)

    sources = {}
    _, sources["landscape.jpg"] = photo(1600, 1200, 1, ".jpg", Q=85)
    portrait, _ = photo(1600, 1200, 2, ".jpg")
    portrait = portrait.copy()
    portrait.set_type(pyvips.GValue.gint_type, "orientation", 6)
    sources["portrait-exif6.jpg"] = portrait.write_to_buffer(".jpg", Q=85)
    alpha, _ = photo(960, 960, 3, ".png")
    sources["alpha.png"] = alpha.bandjoin(255).copy(interpretation="srgb").write_to_buffer(".png", compression=1)
    _, sources["square.webp"] = photo(1024, 1024, 4, ".webp", Q=80)
    _, sources["phone.jpg"] = photo(2016, 1512, 5, ".jpg", Q=85)
    kinds = {name: ("photo", None) for name in sources}

    def hostile(name, data, *codes):
        sources[name] = data
        kinds[name] = ("hostile", set(codes))

    _, small = photo(320, 240, 6, ".jpg")
    hostile("too-small.jpg", small, "TOO_SMALL")
    hostile("truncated.jpg", sources["phone.jpg"][: len(sources["phone.jpg"]) // 3], "DECODE_FAILED")
    hostile("zero-byte.jpg", b"", "UNSUPPORTED_FORMAT", "DECODE_FAILED")
    hostile("html-404.jpg", b"<!doctype html><html><body>404 Not Found</body></html>\n", "UNSUPPORTED_FORMAT")
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="4000" height="4000">' + b"<rect/>" * 4000 + b"</svg>"
    hostile("truncated.svgz", gzip.compress(svg)[:185], "UNSUPPORTED_FORMAT")
    hostile("header-bomb.png", png_header_bomb(60000, 60000), "TOO_MANY_PIXELS")
    # Over image.max-mb (chaos.sh sets 8): refused from the object's size, never downloaded.
    hostile("oversized.jpg", b"\xff\xd8\xff\xe0" + os.urandom(9 * 1024 * 1024), "TOO_LARGE")
    fixtures = os.path.join(root, "Tests", "Fixtures", "hostile")
    if os.path.isdir(fixtures):
        for name in sorted(os.listdir(fixtures)):
            if not name.endswith(".md"):
                sources["fixture-" + name] = open(os.path.join(fixtures, name), "rb").read()
                kinds["fixture-" + name] = ("hostile", None)
    # Real photos whose bytes carry a marker the render helper's test-only seams act on.
    for name, (marker, code) in CONTAINED.items():
        sources[name] = sources["landscape.jpg"] + marker
        kinds[name] = ("contained", {code})
    for name, data in mutated_sources(sources).items():
        sources[name] = data
        kinds[name] = ("mutated", None)
    return {name: (data,) + kinds[name] for name, data in sources.items()}


def mutate(rng, data):
    """One plain mutation of a photo, as a careless or hostile uploader makes: bytes flipped, a 32-bit field
    (an ISOBMFF box size, an item's extent, a JPEG length) overwritten with an extreme value, or the file cut."""
    data = bytearray(data)
    roll = rng.random()
    if roll < 0.4:
        for _ in range(rng.randrange(1, 9)):
            index = rng.randrange(len(data))
            data[index] ^= 1 << rng.randrange(8)
    elif roll < 0.8:
        # Most of a HEIC's structure sits in its first few KiB (ftyp, meta, iinf, iloc, ipma, grid).
        index = rng.randrange(min(len(data) - 4, 4096))
        data[index:index + 4] = struct.pack(">I", rng.choice([0, 1, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF,
                                                              rng.getrandbits(32)]))
    else:
        del data[rng.randrange(len(data) // 8, len(data)):]
    return bytes(data)


def mutated_sources(sources):
    """{name: bytes}: MUTATIONS mutations of real photos, the fuzz regression inputs and a sample of the fuzz
    corpus (their parameter prefix removed: the rest is the file)."""
    rng = random.Random(1803)
    originals = [sources["landscape.jpg"], open(os.path.join(root, "Tests", "Fixtures", "formats",
                                                             "heic_iphone-7-plus_1008x756.heic"), "rb").read()]
    corpus = os.environ.get("AVATAR_TEST_CORPUS") or os.path.join(root, "..", "shared", "corpus")
    ios18 = os.path.join(corpus, "formats", "heic_iphone-ios18_tmap-gainmap_4284x5712.heic")
    if os.path.isfile(ios18):
        originals.append(open(ios18, "rb").read())
    mutated = {f"mutated-{index:02}": mutate(rng, originals[index % len(originals)]) for index in range(MUTATIONS)}
    fuzz = []
    for harness in ("jpeg", "heif"):
        for folder, limit in ((os.path.join(root, "Tests", "Fixtures", "fuzz-regressions", harness), None),
                              (os.path.join(root, ".build-fuzz", "corpus", harness), FUZZ_CORPUS_SAMPLE // 2)):
            names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
            names = names if limit is None else rng.sample(names, min(limit, len(names)))
            fuzz += [(harness, os.path.join(folder, name)) for name in names]
    for index, (harness, path) in enumerate(fuzz):
        data = open(path, "rb").read()[FUZZ_PARAMETER_BYTES:]
        if data:
            mutated[f"fuzz-{harness}-{index:02}"] = data
    return mutated


def png_header_bomb(width, height):
    """A PNG whose header declares width × height 8-bit grey pixels and whose data is a few bytes."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def s3(env, method, key, data=None, output=None, query=""):
    """A SigV4-signed request to the avatar store with curl; returns the HTTP status."""
    payload = data if data is not None else b""
    command = [
        "curl", "-s", "-o", output or "/dev/null", "-w", "%{http_code}", "--max-time", "30", "-X", method,
        "-H", "x-amz-content-sha256: " + hashlib.sha256(payload).hexdigest(),
        "--aws-sigv4", f"aws:amz:{env['AVATAR_TEST_S3_REGION']}:s3",
        "--user", f"{env['AVATAR_TEST_S3_ACCESS_KEY']}:{env['AVATAR_TEST_S3_SECRET_KEY']}",
    ]
    if data is not None:
        command += ["--data-binary", "@-", "-H", "Content-Type: application/octet-stream"]
    command.append(f"{env['AVATAR_TEST_S3_ENDPOINT']}/{env['AVATAR_TEST_S3_BUCKET']}/{key}{query}")
    done = subprocess.run(command, input=payload, capture_output=True)
    return int(done.stdout.decode() or 0)


# MARK: - Workers


class Workers:
    """Two worker processes, restarted after they exit, as an orchestrator would."""

    def __init__(self, binary, environment, logs, count=2):
        self.binary, self.environment, self.logs = binary, environment, logs
        self.processes = [None] * count
        self.exits = []  # (worker, returncode)
        self.stopping = False
        self.lock = threading.Lock()
        for index in range(count):
            self.start(index)
        self.thread = threading.Thread(target=self.supervise, daemon=True)
        self.thread.start()

    def start(self, index):
        # CHAOS_HTTP_PORT moves the workers' endpoints when another chaos run holds 18480 on this machine.
        env = dict(self.environment, AVATAR_HTTP_PORT=str(int(os.environ.get("CHAOS_HTTP_PORT", "18480")) + index))
        out = open(os.path.join(self.logs, f"worker-{index}.log"), "a")
        # A session (and process group) of its own, killed whole as a container is: a worker killed while the Swift
        # runtime's crash backtracer (swift-backtrace, a child) inspects it leaves that child waiting forever with
        # the worker's listening socket, and the next worker could not bind its port.
        self.processes[index] = subprocess.Popen(
            [self.binary, "worker"], env=env, stdout=out, stderr=out, start_new_session=True)

    def supervise(self):
        while not self.stopping:
            with self.lock:
                for index, process in enumerate(self.processes):
                    code = process.poll()
                    if code is not None and not self.stopping:
                        self.kill_group(process)  # what the worker left behind goes with it, as in a container
                        self.exits.append((index, code))
                        log(f"worker {index} exited ({describe_exit(code)}); restarting it")
                        time.sleep(1)
                        self.start(index)
            time.sleep(0.2)

    def kill(self, index):
        with self.lock:
            self.kill_group(self.processes[index])

    @staticmethod
    def kill_group(process):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def stop(self):
        self.stopping = True
        for process in self.processes:
            process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()


def describe_exit(code):
    return f"signal {-code}" if code < 0 else f"status {code}"


# MARK: - Results


class Results:
    """Every result event, by job id, read from the beginning of the results topic."""

    def __init__(self, brokers):
        self.by_job = {}
        self.lock = threading.Lock()
        self.stopping = False
        self.consumer = Consumer({
            "bootstrap.servers": brokers, "group.id": f"chaos-results-{uuid.uuid4()}",
            "auto.offset.reset": "earliest", "enable.auto.commit": False, "session.timeout.ms": 6000,
            "log_level": 2,  # the broker restart is expected: no connection-refused noise
        })
        # The consumer is used from its own thread only (its calls block each other); joining is signalled.
        self.joined = threading.Event()
        self.consumer.subscribe([RESULTS], on_assign=lambda consumer, partitions: self.joined.set())
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping:
            try:
                message = self.consumer.poll(0.5)
            except KafkaException:
                continue
            if message is None or message.error():
                continue
            result = crop_result_pb2.CropResult()
            try:
                result.ParseFromString(message.value())
            except Exception:  # noqa: BLE001 - a result that does not parse is reported by the checks
                continue
            with self.lock:
                self.by_job.setdefault(result.job_id, []).append(result)

    def snapshot(self):
        with self.lock:
            return {job: list(results) for job, results in self.by_job.items()}

    def stop(self):
        self.stopping = True
        self.thread.join(5)
        if not self.thread.is_alive():
            self.consumer.close()


def outcome(result):
    if result.WhichOneof("outcome") == "failure":
        return result.failure.error_code
    return crop_result_pb2.CropResult.Disposition.Name(result.success.disposition).replace("DISPOSITION_", "")


# MARK: - The run


def plan_jobs(rng, count, sources, formats):
    """Crop requests: (job_id, user_id, key, bytes, headers, expectation) in send order. A third of the photo
    requests ask for `formats` (ImageFormat values) and a WebP at 96 px, when `formats` is not empty."""
    photos = [name for name, (_, kind, _) in sources.items() if kind == "photo"]
    hostile = [name for name, (_, kind, _) in sources.items() if kind == "hostile"]
    users = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(max(1, count // 4))]
    base = time.time() - 3600
    jobs, sequence = [], 0
    while len(jobs) < count:
        user = rng.choice(users)
        sequence += 1
        request = crop_request_pb2.CropRequest(job_id=str(uuid.uuid4()), user_id=user)
        roll = rng.random()
        if roll < 0.03:
            request.source_key = "uploads/chaos/" + rng.choice(hostile)
        elif roll < 0.035:
            request.source_key = "uploads/chaos/missing-" + request.job_id + ".jpg"
        else:
            request.source_key = "uploads/chaos/" + rng.choice(photos)
            if rng.random() < 0.5:
                request.pose.scale, request.pose.tx, request.pose.ty = rng.uniform(0.5, 6), rng.uniform(-80, 80), 0
            if formats and rng.random() < 1 / 3:
                request.output.formats.extend(formats)
                request.extra_sizes.append(96)
                request.extra_formats.append(common_pb2.IMAGE_FORMAT_WEBP)
        # requested_at follows the plan's order, but the send order is shuffled a little below, so some of
        # one user's requests arrive after a newer one (they must end SUPERSEDED, never overwrite it).
        request.requested_at.FromNanoseconds(int((base + sequence) * 1e9))
        key_roll = rng.random()
        key = (user.encode() if key_roll < 0.7 else user.upper().encode() if key_roll < 0.8
               else None if key_roll < 0.9 else str(uuid.uuid4()).encode())
        jobs.append((request.job_id, user, key, request.SerializeToString(), [], "request"))
    # Out of order: swap neighbours now and then.
    for index in range(len(jobs) - 1):
        if rng.random() < 0.15:
            jobs[index], jobs[index + 1] = jobs[index + 1], jobs[index]
    # Duplicates: some requests are sent again later (at-least-once producers do that).
    for original in rng.sample(jobs, max(1, count // 25)):
        jobs.insert(rng.randrange(jobs.index(original), len(jobs) + 1), original[:5] + ("duplicate",))
    # Malformed messages, each with a job-id header so its result can be found.
    for _ in range(max(1, count // 100)):
        job_id = str(uuid.uuid4())
        body = rng.choice([os.urandom(rng.randrange(1, 200)), b'{"jobId": 5, "userId": [}', b"\x0a\xff\xff\xff\xff"])
        content = b"application/json" if body.startswith(b"{") else b"application/x-protobuf"
        jobs.insert(rng.randrange(len(jobs)), (job_id, None, None, body, [("job-id", job_id.encode()),
                                                                          ("content-type", content)], "malformed"))
    return jobs


def plan_cli_forgets(rng, jobs, exclude, count):
    """Users forgotten with `avatar-cropper forget` (as an account deletion would) while their jobs run and while the
    faults are injected: [(seconds after the start, user)], at times just before or inside the schedule's Postgres
    restart, broker kill and store stop (chaos_schedule). Users that forget requests also forget are left out."""
    users = sorted({user for _, user, _, _, _, kind in jobs if kind == "request"} - set(exclude))
    seconds = [17, 19, 41, 43, 55, 58, 62][:count]
    return list(zip(seconds, rng.sample(users, min(len(seconds), len(users)))))


def forget_loop(binary, environment, planned, started, forgotten):
    """Runs each planned CLI forget at its time, all on threads of their own (a forget on S3 waits the store's deadline
    before its last look, so one after another would miss their faults); a forget the faults make fail is run again
    until it returns 0, as an operator would (a forget is idempotent), and the user counts as forgotten from then on."""

    def forget(second, user):
        delay = second - (time.monotonic() - started)
        if delay > 0:
            time.sleep(delay)
        attempts = 0
        while True:
            attempts += 1
            try:
                done = subprocess.run([binary, "forget", "--user", user], env=environment, capture_output=True,
                                      text=True, timeout=180)
                if done.returncode == 0:
                    break
            except subprocess.SubprocessError:
                pass
            time.sleep(2)
        log(f"forgot user {user[:8]} with the CLI at {second} s ({attempts} attempt(s))")
        forgotten[user] = attempts

    threads = [threading.Thread(target=forget, args=item, daemon=True) for item in planned]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def age_tombstones(database):
    """Moves every forget tombstone's record two hours back, as prune_loop does to the ledger rows: a tombstone must
    outlive every message that can come back, whatever the retention (migration 0009 keeps them)."""
    psql(database, "UPDATE avatar_forgotten_users SET recorded_at = recorded_at - interval '2 hours'")


def replay_forgotten(binary, environment, users, logs):
    """Replays every DLQ record of the forgotten users, permanent failures too: none may publish again."""
    command = [binary, "replay", "--idle-seconds", "10", "--error-class", "any"]
    for user in sorted(users):
        command += ["--user", user]
    subprocess.run(command, env=environment, check=True, stdout=open(os.path.join(logs, "replay.log"), "a"))


def s3_all_keys(env, prefix, work):
    """Every key under `prefix`, page after page (ListObjectsV2 from the last key seen: SeaweedFS' continuation
    tokens hold characters curl's SigV4 signs otherwise than the server, which then refuses the request)."""
    keys = []
    listing = os.path.join(work, "listing.xml")
    while True:
        query = f"?list-type=2&prefix={urllib.parse.quote(prefix, safe='')}"
        if keys:
            query += f"&start-after={urllib.parse.quote(keys[-1], safe='')}"
        status = s3(env, "GET", "", output=listing, query=query)
        if status != 200:
            raise RuntimeError(f"listing {prefix} failed with HTTP {status}")
        page = open(listing).read()
        found = re.findall(r"<Key>([^<]*)</Key>", page)
        keys += found
        if "<IsTruncated>true</IsTruncated>" not in page or not found:
            return keys


def forgotten_left_behind(env, database, users, work):
    """What is left of the forgotten users anywhere: every object of the bucket's users/ prefix listed, every text or
    uuid column of every table of the schema queried (the tombstones apart: they are the forget's own record)."""
    left = []
    owners = {}
    for key in s3_all_keys(env, "users/", work):
        owners.setdefault(key.split("/")[1], []).append(key)
    for user in sorted(users):
        if owners.get(user):
            left.append(f"{user[:8]}: {len(owners[user])} objects, e.g. {owners[user][0]}")
    columns = psql(database, """
        SELECT table_name, column_name FROM information_schema.columns
         WHERE table_schema = current_schema() AND data_type IN ('uuid', 'text', 'character varying')
           AND table_name <> 'avatar_forgotten_users'""")
    listed = ",".join(f"'{user}'" for user in sorted(users))
    for table, column in columns:
        count = psql(database, f'SELECT count(*) FROM "{table}" WHERE "{column}"::text IN ({listed})')[0][0]
        if count != "0":
            left.append(f"{table}.{column}: {count} rows")
    return left


def plan_forgets(rng, jobs, count):
    """Forget requests for a few users, each dated after every request of its user and sent somewhere in the
    second half of the stream: whatever of the user was published before is erased, whatever comes after is
    superseded. Returns {job_id: user}."""
    users = sorted({user for _, user, _, _, _, kind in jobs if kind == "request"})
    forgets = {}
    latest = time.time() - 3600 + len(jobs) + 10
    for user in rng.sample(users, min(count, len(users))):
        request = crop_request_pb2.CropRequest(job_id=str(uuid.uuid4()), user_id=user,
                                               kind=crop_request_pb2.CropRequest.KIND_FORGET)
        request.requested_at.FromNanoseconds(int(latest * 1e9))
        jobs.insert(rng.randrange(len(jobs) // 2, len(jobs)),
                    (request.job_id, user, user.encode(), request.SerializeToString(), [], "forget"))
        forgets[request.job_id] = user
    return forgets


def prune_loop(binary, environment, database, stop, counts):
    """Prunes aggressively while the workers run: moves every finished ledger row two hours back (as if the
    retention had passed; rows being rendered keep their time) and the forget tombstones alike (age_tombstones), and
    prunes with a one-hour retention."""
    env = dict(environment, AVATAR_LEDGER_RETENTION_HOURS="1", AVATAR_LEDGER_PRUNE_BATCH="200")
    while not stop.wait(3):
        try:
            psql(database, "UPDATE avatar_crop_jobs SET finished_at = finished_at - interval '2 hours' "
                           "WHERE status <> 'started'")
            age_tombstones(database)
            done = subprocess.run([binary, "prune"], env=env, capture_output=True, text=True, timeout=120)
            match = re.search(r"pruned (\d+)", done.stdout)
            if match:
                counts["rows"] += int(match.group(1))
                counts["runs"] += 1
        except (subprocess.SubprocessError, OSError):
            counts["failed"] += 1  # Postgres is restarted on purpose; the next round prunes


def chaos_schedule(workers, services, events):
    """Faults at fixed times after the first message; each is logged and recorded in `events`."""

    def at(second, name, action):
        delay = second - (time.monotonic() - start)
        if delay > 0:
            time.sleep(delay)
        log(name)
        events.append((round(time.monotonic() - start, 1), name))
        action()

    def restart(service, down):
        subprocess.run([services, "kill", service], check=True)
        time.sleep(down)
        subprocess.run([services, "resume", service], check=True)

    start = time.monotonic()
    at(8, "kill -9 worker 0", lambda: workers.kill(0))
    at(18, "restart Postgres (immediate shutdown, 3 s down)", lambda: restart("postgres", 3))
    at(30, "kill -9 worker 1", lambda: workers.kill(1))
    at(42, "kill -9 the broker, 2 s down, restart on its s3:// log", lambda: restart("kafka", 2))
    at(56, "stop the object store for 8 s", lambda: restart("s3", 8))
    at(72, "kill -9 worker 0", lambda: workers.kill(0))


# The loader libvips names for each key extension (`vips-loader`), for the formats check.
LOADERS = {"png": "pngload", "jpg": "jpegload", "webp": "webpload", "avif": "heifload"}
PRIVATE_FIELDS = ("exif-data", "xmp-data", "iptc-data")


def check_published_formats(env, database, logs):
    """Every object of every current version (its avatar and renditions, as the ledger names them): a file of the
    key's format at the key's size, byte-identical to the version's own copy, without EXIF, XMP or IPTC. Returns
    (objects checked, problems)."""
    import pyvips

    rows = psql(database, """
        SELECT p.id, p.avatar_version, j.job_id, j.avatar_path, coalesce(array_to_string(j.rendition_paths, ','), '')
          FROM profiles p JOIN avatar_crop_jobs j
            ON j.user_id = p.id AND j.status = 'succeeded' AND j.avatar_version = p.avatar_version
         WHERE p.avatar_version > 0""")
    checked, problems = 0, []
    fetched = os.path.join(logs, "fetched-format")
    for user, version, job, path, renditions in rows:
        tag = hashlib.sha256(job.encode()).hexdigest()[:16]
        for key in [path] + [k for k in renditions.split(",") if k]:
            folder, name = key.rsplit("/", 1)
            match = re.fullmatch(r"avatar_(\d+)\.(png|jpg|webp|avif)", name)
            if not match:
                problems.append(f"{key}: not an avatar key")
                continue
            versioned = f"{folder}/versions/{version}/{tag}/{name}"
            if s3(env, "GET", key, output=fetched) != 200:
                problems.append(f"{key}: missing")
                continue
            data = open(fetched, "rb").read()
            if s3(env, "GET", versioned, output=fetched) != 200 or open(fetched, "rb").read() != data:
                problems.append(f"{key}: not version {version}'s bytes")
            checked += 1
            try:
                image = pyvips.Image.new_from_buffer(data, "")
            except pyvips.Error as error:
                problems.append(f"{key}: not a valid file ({str(error).splitlines()[0]})")
                continue
            size = int(match.group(1))
            if (image.width, image.height) != (size, size):
                problems.append(f"{key}: {image.width}x{image.height}")
            if image.get("vips-loader").removesuffix("_buffer") != LOADERS[match.group(2)]:
                problems.append(f"{key}: read by {image.get('vips-loader')}")
            leaked = [field for field in image.get_fields() if field in PRIVATE_FIELDS or field.startswith("exif-")]
            if leaked:
                problems.append(f"{key}: carries {leaked}")
    return checked, problems


def psql(url, sql):
    done = subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-At", "-F", "|", "-c", sql],
                          capture_output=True, text=True, check=True)
    return [line.split("|") for line in done.stdout.splitlines() if line]


def partition_ends(brokers, topic):
    """The offset after the last message of each partition, found by reading to the end (Tansu's 'latest'
    lookups are off by one batch, so they are not used)."""
    consumer = Consumer({"bootstrap.servers": brokers, "group.id": f"chaos-ends-{uuid.uuid4()}",
                         "enable.partition.eof": True, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    ends, eof, deadline = {p: 0 for p in range(PARTITIONS)}, set(), time.time() + 60
    while len(eof) < PARTITIONS and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error():
            if message.error().code() == -191:  # _PARTITION_EOF
                eof.add(message.partition())
            continue
        ends[message.partition()] = message.offset() + 1
    consumer.close()
    return ends


def committed(brokers, topic):
    consumer = Consumer({"bootstrap.servers": brokers, "group.id": GROUP, "enable.auto.commit": False})
    offsets = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=20)
    consumer.close()
    return {tp.partition: max(tp.offset, 0) for tp in offsets}


def wait_for(description, predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(1)
    log(f"gave up waiting for {description} after {timeout} s")
    return False


def main():
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 prints every thread's stack
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="folder with the avatar-cropper binary")
    parser.add_argument("--run", required=True, help="services.sh run folder (its env file)")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout", type=int, default=300, help="seconds to wait for every result")
    parser.add_argument("--report", help="write the figures as JSON here")
    parser.add_argument("--formats", default=os.environ.get("CHAOS_FORMATS", "png,webp,avif"),
                        help="the avatar formats a third of the requests ask for (empty: none ask)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    env = load_env(os.path.join(args.run, "env"))
    brokers, database = env["AVATAR_TEST_KAFKA_BROKERS"], env["AVATAR_TEST_DATABASE_URL"]
    binary = os.path.join(args.bin, "avatar-cropper")
    services = os.path.join(root, "scripts", "services.sh")
    logs = os.path.join(args.run, "chaos")
    os.makedirs(logs, exist_ok=True)
    began = time.monotonic()

    worker_env = dict(
        os.environ,
        AVATAR_DATABASE_URL=database, AVATAR_KAFKA_BROKERS=brokers,
        AVATAR_STORAGE_URL=(f"s3://{env['AVATAR_TEST_S3_BUCKET']}?endpoint={env['AVATAR_TEST_S3_ENDPOINT']}"
                            f"&region={env['AVATAR_TEST_S3_REGION']}&pathStyle=true"),
        AVATAR_STORAGE_S3_ACCESS_KEY_ID=env["AVATAR_TEST_S3_ACCESS_KEY"],
        AVATAR_STORAGE_S3_SECRET_ACCESS_KEY=env["AVATAR_TEST_S3_SECRET_KEY"],
        AVATAR_STORAGE_PUBLIC_BASE_URL="https://avatars.chaos.test",
        AVATAR_KAFKA_GROUP_ID=GROUP, AVATAR_KAFKA_TOPIC_REQUESTS=REQUESTS, AVATAR_KAFKA_TOPIC_RESULTS=RESULTS,
        AVATAR_KAFKA_TOPIC_METRICS="chaos.crop.metrics", AVATAR_KAFKA_TOPIC_DLQ=DLQ,
        AVATAR_KAFKA_PROPERTY_SESSION_TIMEOUT_MS="6000",
        AVATAR_WORKER_RENDER_SLOTS="1", AVATAR_WORKER_DRAIN_SECONDS="5", AVATAR_IMAGE_MAX_MB="8",
        AVATAR_HTTP_HOST="127.0.0.1", AVATAR_LOG_LEVEL=os.environ.get("CHAOS_WORKER_LOG_LEVEL", "notice"),
        # Test-only seams (JobTestSeams): a source carrying a marker crashes, hangs or bombs its render helper.
        AVATAR_TEST_SEAMS="source-markers", AVATAR_WORKER_JOB_TIMEOUT_SECONDS=str(JOB_TIMEOUT_SECONDS),
        # The workers' own scheduled prune (the harness ages the rows past the retention, prune_loop).
        AVATAR_LEDGER_RETENTION_HOURS="1", AVATAR_LEDGER_PRUNE_INTERVAL_MINUTES="1",
    )
    subprocess.run([binary, "migrate"], env=worker_env, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([binary, "topics", "--partitions", str(PARTITIONS)], env=worker_env, check=True,
                   stdout=subprocess.DEVNULL)

    log("making and uploading the source photos")
    sources = make_sources(logs)
    for name, (data, _, _) in sources.items():
        status = s3(env, "PUT", "uploads/chaos/" + name, data)
        if status != 200:
            sys.exit(f"chaos: uploading {name} failed with HTTP {status}")
    formats = [common_pb2.ImageFormat.Value("IMAGE_FORMAT_" + name.strip().upper())
               for name in args.formats.split(",") if name.strip()]
    jobs = plan_jobs(rng, args.jobs, sources, formats)
    forgets = plan_forgets(rng, jobs, max(1, args.jobs // 400))
    cli_forgets, cli_forgotten = plan_cli_forgets(rng, jobs, forgets.values(), max(1, args.jobs // 300)), {}
    expected = {job_id: kind for job_id, _, _, _, _, kind in jobs if kind != "duplicate"}
    source_of = {}
    for job_id, _, _, body, _, kind in jobs:
        if kind == "request":
            request = crop_request_pb2.CropRequest()
            request.ParseFromString(body)
            source_of[job_id] = request.source_key.rsplit("/", 1)[-1]
    contained, mutations = [], []
    for name, (_, kind, _) in sources.items():
        if kind not in ("contained", "mutated"):
            continue
        request = crop_request_pb2.CropRequest(job_id=str(uuid.uuid4()), user_id=str(uuid.uuid4()),
                                               source_key="uploads/chaos/" + name)
        request.requested_at.GetCurrentTime()
        expected[request.job_id] = kind
        source_of[request.job_id] = name
        (contained if kind == "contained" else mutations).append(request)

    results = Results(brokers)
    if not results.joined.wait(30):
        sys.exit("chaos: the result reader did not join its group within 30 s")
    workers = Workers(binary, worker_env, logs)
    events = []
    producer = Producer({"bootstrap.servers": brokers, "linger.ms": 5, "acks": "all", "log_level": 2,
                         "message.timeout.ms": 120000})
    chaos = threading.Thread(target=chaos_schedule, args=(workers, services, events), daemon=True)
    log(f"producing {len(jobs)} messages ({len(expected)} jobs, {len(forgets)} forgets) over ~40 s; faults and "
        "pruning start now")
    chaos.start()
    prune_stop, prunes = threading.Event(), {"rows": 0, "runs": 0, "failed": 0}
    pruner = threading.Thread(target=prune_loop, args=(binary, worker_env, database, prune_stop, prunes), daemon=True)
    pruner.start()
    forgetter = threading.Thread(target=forget_loop, args=(binary, worker_env, cli_forgets, time.monotonic(),
                                                           cli_forgotten), daemon=True)
    forgetter.start()
    # While the faults run: the attacks, the mutations, and the hang last, on its own: it holds its worker's only
    # render slot until its deadline, and a job queued behind it times out before it renders (an attack that did
    # ended as TIMEOUT, not with its own code).
    batches = {len(jobs) // 3: [r for r in contained if source_of[r.job_id] != HANG],
               len(jobs) // 2: mutations,
               2 * len(jobs) // 3: [r for r in contained if source_of[r.job_id] == HANG]}
    for index, (job_id, user, key, body, headers, kind) in enumerate(jobs):
        headers = headers or [("content-type", b"application/x-protobuf")]
        producer.produce(REQUESTS, key=key, value=body, headers=headers)
        if index in batches:
            for request in batches[index]:
                producer.produce(REQUESTS, key=request.user_id.encode(), value=request.SerializeToString(),
                                 headers=[("content-type", b"application/x-protobuf")])
        if index % 50 == 49:
            producer.poll(0)
            time.sleep(1)
    unsent = producer.flush(180)
    if unsent:
        sys.exit(f"chaos: {unsent} messages were never acknowledged by the broker")
    chaos.join()

    log("waiting for every job's result")
    wait_for("every job's result", lambda: expected.keys() <= results.snapshot().keys(), args.timeout)

    # Replay what failed transiently (the services were down) and wait for the new results.
    replays = 0
    for _ in range(3):
        latest = {job: rs[-1] for job, rs in results.snapshot().items()}
        pending = {job for job, r in latest.items()
                   if job in expected and expected[job] != "contained" and outcome(r) in TRANSIENT
                   and not (expected[job] == "mutated" and outcome(r) in MUTATED_OWN_TRANSIENT)}
        if not pending:
            break
        replays += 1
        counts = {job: len(rs) for job, rs in results.snapshot().items()}
        log(f"replaying the DLQ ({len(pending)} jobs failed transiently)")
        # Only those jobs, as an operator would: a mutated upload that timed out on its own (accepted above) would
        # otherwise come back with them and hold a render slot again, and a job queued behind it could time out.
        command = [binary, "replay", "--idle-seconds", "10"]
        for job in sorted(pending):
            command += ["--job-id", job]
        subprocess.run(command, env=worker_env, check=True, stdout=open(os.path.join(logs, "replay.log"), "a"))
        wait_for("the replayed jobs' results",
                 lambda: all(len(results.snapshot().get(job, [])) > counts[job] for job in pending), args.timeout)

    # Every DLQ record of every forgotten user replayed: none may bring anything back.
    forgetter.join(600)
    everyone_forgotten = set(forgets.values()) | set(cli_forgotten)
    counts = {job: len(rs) for job, rs in results.snapshot().items()}
    log(f"replaying the DLQ records of the {len(everyone_forgotten)} forgotten users")
    replay_forgotten(binary, worker_env, everyone_forgotten, logs)
    time.sleep(15)  # their results, if any record was replayed
    # Committed offsets catch up within a few commit intervals once the last job is finished.
    ends = partition_ends(brokers, REQUESTS)
    wait_for("the group's commits to reach the end of every partition",
             lambda: all(committed(brokers, REQUESTS).get(p, 0) >= end for p, end in ends.items()), 60)
    finished = time.monotonic() - began
    commits = committed(brokers, REQUESTS)
    prune_stop.set()
    pruner.join(180)
    workers.stop()
    results.stop()
    snapshot = results.snapshot()

    # MARK: checks
    latest = {job: rs[-1] for job, rs in snapshot.items() if job in expected}
    lost = sorted(set(expected) - set(latest))
    unresolved = sorted(job for job, r in latest.items() if outcome(r) in TRANSIENT and expected[job] != "contained"
                        and not (expected[job] == "mutated" and outcome(r) in MUTATED_OWN_TRANSIENT))
    by_outcome = {}
    for job, r in latest.items():
        by_outcome[outcome(r)] = by_outcome.get(outcome(r), 0) + 1
    hostile_wrong = sorted(
        f"{source_of[job]}: {outcome(r)}" for job, r in latest.items()
        if source_of.get(job) in sources and sources[source_of[job]][1] == "hostile"
        # A hostile job that lost before its source was read (a newer avatar of its user is published) is
        # SUPERSEDED or DUPLICATE: right too, it never touched the file.
        and (sources[source_of[job]][2] is not None
             and outcome(r) not in sources[source_of[job]][2] | {"SUPERSEDED", "DUPLICATE"}
             or outcome(r) in TRANSIENT | {"APPLIED"}))
    malformed_wrong = sorted(job for job, kind in expected.items()
                             if kind == "malformed" and job in latest
                             and outcome(latest[job]) not in {"MALFORMED_REQUEST", "INVALID_ID", "INVALID_REQUEST"})
    # Each attack on a render helper: its code, on the first render (one result, one attempt).
    contained_wrong = []
    for request in contained:
        name, results_of = source_of[request.job_id], snapshot.get(request.job_id, [])
        want = CONTAINED[name][1]
        if not results_of:
            contained_wrong.append(f"{name}: no result")
        elif outcome(results_of[0]) != want or results_of[0].failure.attempts != 1:
            contained_wrong.append(f"{name}: {outcome(results_of[0])} (attempts {results_of[0].failure.attempts})")
    mutated_outcomes = {}
    for request in mutations:
        if request.job_id in latest:
            name = outcome(latest[request.job_id])
            mutated_outcomes[name] = mutated_outcomes.get(name, 0) + 1
    forget_wrong = sorted(job for job in forgets if job in latest and outcome(latest[job]) != "FORGOTTEN")

    # Version bumps from the result events (the ledger is pruned): every APPLIED or DUPLICATE result names the
    # version its job applied. A job naming two versions was bumped twice; a version named by two jobs, or above
    # the profile's, too. Forgotten users start again and are checked apart.
    forgotten_users = set(forgets.values()) | set(cli_forgotten)
    versions_of_job, jobs_of_version, requested_of = {}, {}, {}
    for job, rs in snapshot.items():
        for r in rs:
            if outcome(r) in ("APPLIED", "DUPLICATE") and r.user_id not in forgotten_users:
                versions_of_job.setdefault(job, set()).add(r.success.avatar_version)
                jobs_of_version.setdefault((r.user_id, r.success.avatar_version), set()).add(job)
                requested_of[job] = r.requested_at.ToNanoseconds()
    profiles = {user: int(version) for user, version in psql(database, "SELECT id, avatar_version FROM profiles")}
    bumped_twice = ([f"job {job[:8]}: versions {sorted(v)}" for job, v in versions_of_job.items() if len(v) > 1]
                    + [f"user {u[:8]} v{v}: jobs {sorted(j)}" for (u, v), j in jobs_of_version.items() if len(j) > 1]
                    + [f"user {u[:8]} v{v} > profile {profiles.get(u, 0)}" for (u, v) in jobs_of_version
                       if v > profiles.get(u, 0)])
    double_bumps = len(bumped_twice)
    for line in bumped_twice:
        log("double bump? " + line)
    # A version whose job's APPLIED result was lost (killed between commit and result) and whose redelivery found
    # the row pruned (SUPERSEDED) is named by no result: counted, not a failure.
    unattributed = sum(1 for user, version in profiles.items() if user not in forgotten_users
                       for v in range(1, version + 1) if (user, v) not in jobs_of_version)
    stale, newest = 0, {}
    for (user, version) in sorted(jobs_of_version):
        requested = max(requested_of[job] for job in jobs_of_version[(user, version)])
        if requested < newest.get(user, 0):
            stale += 1
        newest[user] = max(newest.get(user, 0), requested)
    left_behind = forgotten_left_behind(env, database, forgotten_users, logs)
    tombstones = int(psql(database, "SELECT count(*) FROM avatar_forgotten_users WHERE user_id::text IN ("
                                    + ",".join(f"'{u}'" for u in sorted(forgotten_users)) + ")")[0][0])
    has_digest = psql(database, """
        SELECT count(*) FROM information_schema.columns
         WHERE table_name = 'avatar_crop_jobs' AND column_name = 'avatar_sha256'
           AND table_schema = current_schema()""")[0][0] == "1"
    current = [] if not has_digest else psql(database, """
        SELECT p.id, p.avatar_path, p.avatar_version, j.avatar_sha256
          FROM profiles p JOIN avatar_crop_jobs j
            ON j.user_id = p.id AND j.status = 'succeeded' AND j.avatar_version = p.avatar_version
         WHERE p.avatar_version > 0""")
    mismatched = [] if has_digest else ["the ledger records no avatar_sha256: bytes cannot be checked"]
    for user, path, version, digest in current:
        fetched = os.path.join(logs, "fetched.png")
        status = s3(env, "GET", path, output=fetched)
        actual = hashlib.sha256(open(fetched, "rb").read()).hexdigest() if status == 200 else f"HTTP {status}"
        if actual != digest:
            mismatched.append(f"version {version}: {actual[:12]} != {digest[:12]}")
    objects_checked, format_problems = check_published_formats(env, database, logs)
    stuck = sorted(p for p, end in ends.items() if commits.get(p, 0) < end)
    crashes = [code for _, code in workers.exits if code != -signal.SIGKILL]
    # A worker that died of a signal the harness did not send: an upload reached it.
    killed_by_upload = [describe_exit(code) for code in crashes if code < 0]

    figures = {
        "jobs_produced": len(expected), "messages_produced": len(jobs) + 1,
        "duplicates_sent": sum(1 for j in jobs if j[5] == "duplicate"),
        "malformed_sent": sum(1 for k in expected.values() if k == "malformed"),
        "jobs_with_result": len(latest), "lost": len(lost), "unresolved_transient": len(unresolved),
        "double_version_bumps": int(double_bumps), "stale_overwrites": int(stale),
        "versions_named_by_no_result": unattributed, "forgets_sent": len(forgets), "forget_wrong_outcome": len(forget_wrong),
        "cli_forgets": len(cli_forgotten), "cli_forget_attempts": sum(cli_forgotten.values()),
        "forgotten_users": len(forgotten_users), "tombstones_kept": tombstones,
        "forgotten_users_with_data_left": len(left_behind), "prune_runs": prunes["runs"],
        "ledger_rows_pruned": prunes["rows"], "prune_runs_failed": prunes["failed"],
        "published_avatars_checked": len(current), "bytes_not_matching_version": len(mismatched),
        "published_objects_checked": objects_checked, "published_objects_wrong": len(format_problems),
        "stuck_partitions": len(stuck), "hostile_wrong_outcome": len(hostile_wrong),
        "malformed_wrong_outcome": len(malformed_wrong), "helper_attacks": len(contained),
        "helper_attacks_wrong_outcome": len(contained_wrong),
        "mutated_uploads": len(mutations), "mutated_outcomes": dict(sorted(mutated_outcomes.items())),
        "worker_exits_not_by_kill": len(crashes), "worker_deaths_by_signal": len(killed_by_upload),
        "replay_rounds": replays,
        "outcomes": dict(sorted(by_outcome.items())), "faults": events,
        "seconds_to_finish": round(finished, 1),
    }
    print(json.dumps(figures, indent=2))
    if args.report:
        json.dump(figures, open(args.report, "w"), indent=2)
    failures = []
    for name, items in (("lost", lost), ("unresolved transient", unresolved), ("bytes != version", mismatched),
                        ("stuck partitions", stuck), ("hostile files with a wrong outcome", hostile_wrong),
                        ("malformed messages with a wrong outcome", malformed_wrong),
                        ("render helper attacks with a wrong outcome", contained_wrong),
                        ("workers killed by an upload", killed_by_upload),
                        ("forgets with a wrong outcome", forget_wrong),
                        ("forgotten users with data left", left_behind),
                        ("published objects of a wrong format, size, version or with metadata", format_problems)):
        if items:
            failures.append(f"{name}: {len(items)} (e.g. {items[:5]})")
    if int(double_bumps):
        failures.append(f"double version bumps: {double_bumps}")
    if int(stale):
        failures.append(f"stale overwrites: {stale}")
    for failure in failures:
        log("FAIL " + failure)
    log("PASS: every promise held" if not failures else f"{len(failures)} check(s) failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
