"""The stack under test: its services' settings (services.sh's env file), the worker's configuration, and the small
clients the harness uses on Postgres (psql), the store (curl with SigV4) and the broker's offsets."""
import hashlib
import os
import re
import subprocess
import time
import urllib.parse
import uuid

from confluent_kafka import Consumer, TopicPartition


REQUESTS, RESULTS, METRICS, DLQ = ("chaos.crop.requests", "chaos.crop.results", "chaos.crop.metrics",
                                   "chaos.crop.dlq")
GROUP = "chaos-workers"
PARTITIONS = 6
TRANSIENT = {"STORAGE_UNAVAILABLE", "DATABASE_UNAVAILABLE", "TIMEOUT", "OUT_OF_MEMORY", "INTERNAL"}
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


def worker_environment(env):
    """The workers' configuration (and the CLI's: migrate, topics, replay, prune, forget) on the stack of `env`."""
    return dict(
        os.environ,
        AVATAR_DATABASE_URL=env["AVATAR_TEST_DATABASE_URL"],
        AVATAR_DATABASE_TOMBSTONE_KEY=env["AVATAR_TEST_TOMBSTONE_KEY"], AVATAR_KAFKA_BROKERS=env["AVATAR_TEST_KAFKA_BROKERS"],
        AVATAR_STORAGE_URL=(f"s3://{env['AVATAR_TEST_S3_BUCKET']}?endpoint={env['AVATAR_TEST_S3_ENDPOINT']}"
                            f"&region={env['AVATAR_TEST_S3_REGION']}&pathStyle=true"),
        AVATAR_STORAGE_S3_ACCESS_KEY_ID=env["AVATAR_TEST_S3_ACCESS_KEY"],
        AVATAR_STORAGE_S3_SECRET_ACCESS_KEY=env["AVATAR_TEST_S3_SECRET_KEY"],
        AVATAR_STORAGE_PUBLIC_BASE_URL="https://avatars.chaos.test",
        AVATAR_KAFKA_GROUP_ID=GROUP, AVATAR_KAFKA_TOPIC_REQUESTS=REQUESTS, AVATAR_KAFKA_TOPIC_RESULTS=RESULTS,
        AVATAR_KAFKA_TOPIC_METRICS=METRICS, AVATAR_KAFKA_TOPIC_DLQ=DLQ,
        AVATAR_KAFKA_PROPERTY_SESSION_TIMEOUT_MS="6000",
        AVATAR_WORKER_RENDER_SLOTS="1", AVATAR_WORKER_DRAIN_SECONDS="5", AVATAR_IMAGE_MAX_MB="8",
        AVATAR_HTTP_HOST="127.0.0.1", AVATAR_LOG_LEVEL=os.environ.get("CHAOS_WORKER_LOG_LEVEL", "notice"),
        # Test-only seams (JobTestSeams): a source carrying a marker crashes, hangs or bombs its render helper.
        AVATAR_TEST_SEAMS="source-markers", AVATAR_WORKER_JOB_TIMEOUT_SECONDS=str(JOB_TIMEOUT_SECONDS),
        # The workers' own scheduled prune (the harness ages the rows past the retention, faults.prune_loop).
        AVATAR_LEDGER_RETENTION_HOURS="1", AVATAR_LEDGER_PRUNE_INTERVAL_MINUTES="1",
    )


def prepare(binary, worker_env, env):
    """The schema and the topics, and versioning on the bucket (sources and avatars: every forget and deletion
    must then go by version, docs/DATA.md, window 1), before any worker starts."""
    body = (b'<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            b'<Status>Enabled</Status></VersioningConfiguration>')
    status = s3(env, "PUT", "", data=body, query="?versioning=")
    if status != 200:
        raise RuntimeError(f"turning versioning on failed with HTTP {status}")
    subprocess.run([binary, "migrate"], env=worker_env, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([binary, "topics", "--partitions", str(PARTITIONS)], env=worker_env, check=True,
                   stdout=subprocess.DEVNULL)


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


def s3_versions(env, prefix, work):
    """How many versions and delete markers under `prefix` (ListObjectVersions, first 1000: a forgotten user's
    prefix must hold none at all)."""
    listing = os.path.join(work, "versions.xml")
    status = s3(env, "GET", "", output=listing, query=f"?prefix={urllib.parse.quote(prefix, safe='')}&versions=")
    if status != 200:
        raise RuntimeError(f"listing the versions of {prefix} failed with HTTP {status}")
    page = open(listing).read()
    return len(re.findall(r"<Version>", page)) + len(re.findall(r"<DeleteMarker>", page))


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
