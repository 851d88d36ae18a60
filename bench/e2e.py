"""End-to-end benchmark driver: produces crop requests for a job list, waits for
their result events, and reports throughput and enqueue-to-result latency.

Usage: e2e.py BROKERS REQUESTS_TOPIC RESULTS_TOPIC JOBS_JSON OUT_JSON [RATE DURATION_S]

Without RATE: closed burst, every job produced at once (sustained throughput; its latency is mostly
queueing). With RATE (jobs/s) and DURATION_S: open loop, RATE x DURATION_S jobs cycled from JOBS_JSON,
each produced at its scheduled time whatever the worker is doing (latency under that load).

JOBS_JSON is a list of {"source_key", "pose": {...} | "rect": {...} | nothing}.
Latency per job = when its result event reached this process - when its request
was handed to the producer (both on this machine's clock)."""
import json
import os
import sys
import time
import uuid

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "proto", "python"))

from confluent_kafka import Consumer, Producer  # noqa: E402
from avatar.crop.v1 import crop_result_pb2  # noqa: E402
from crop_requests import crop_request, produce  # noqa: E402

brokers, requests_topic, results_topic, jobs_path, out_path = sys.argv[1:6]
jobs = json.load(open(jobs_path))
rate = float(sys.argv[6]) if len(sys.argv) > 6 else None
if rate:
    duration = float(sys.argv[7])
    jobs = [jobs[i % len(jobs)] for i in range(int(rate * duration))]

consumer = Consumer({"bootstrap.servers": brokers, "group.id": f"bench-{uuid.uuid4()}",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "session.timeout.ms": 6000})
consumer.subscribe([results_topic])
# Join the group before producing so no result is missed.
deadline = time.time() + 30
while not consumer.assignment() and time.time() < deadline:
    consumer.poll(0.2)

producer = Producer({"bootstrap.servers": brokers, "linger.ms": 0 if rate else 5})
sent = {}
latencies, failures = [], 0
schedule_start = time.monotonic()


def receive(timeout):
    """One poll of the results topic; records a latency or a failure."""
    global failures
    message = consumer.poll(timeout)
    if message is None or message.error():
        return None
    result = crop_result_pb2.CropResult()
    result.ParseFromString(message.value())
    started = sent.pop(result.job_id, None)
    if started is None:
        return None
    now = time.monotonic()
    if result.WhichOneof("outcome") == "failure":
        failures += 1
    else:
        latencies.append(now - started)
    return now


last = schedule_start
for index, job in enumerate(jobs):
    if rate:
        # Open loop: wait for this job's slot, consuming results meanwhile.
        due = schedule_start + index / rate
        while time.monotonic() < due:
            last = receive(max(0.0, min(0.05, due - time.monotonic()))) or last
    request = crop_request(job)
    sent[request.job_id] = time.monotonic()
    produce(producer, requests_topic, request)
producer.flush(60)
first_sent = schedule_start

total = len(jobs)
deadline = time.monotonic() + 1800
while len(latencies) + failures < total and sent and time.monotonic() < deadline:
    last = receive(1.0) or last
consumer.close()

latencies.sort()


def percentile(p):
    return latencies[min(len(latencies) - 1, int(round(p / 100 * (len(latencies) - 1))))] if latencies else 0.0


elapsed = last - first_sent
import resource  # noqa: E402
usage = resource.getrusage(resource.RUSAGE_SELF)
report = {"mode": f"open loop {rate:g} jobs/s" if rate else "burst", "driver_cpu_s": round(usage.ru_utime + usage.ru_stime, 2), "jobs": len(jobs), "completed": len(latencies), "failures": failures, "missing": len(sent),
          "elapsed_s": elapsed, "throughput_jobs_per_s": len(latencies) / elapsed if elapsed > 0 else 0.0,
          "latency_ms": {"p50": percentile(50) * 1000, "p95": percentile(95) * 1000, "p99": percentile(99) * 1000}}
json.dump(report, open(out_path, "w"), indent=2)
print(json.dumps(report))
sys.exit(0 if not sent and failures == 0 else 1)
