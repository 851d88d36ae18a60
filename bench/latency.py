#!/usr/bin/env python3
"""Latency at low load, photo by photo: crop requests produced at a steady rate through the real path, each job
timed from the moment its request is handed to the producer to the moment its result event arrives here.

  latency.py BROKERS REQUESTS RESULTS METRICS JOBS_JSON RATE DURATION_S OUT_JSON

JOBS_JSON: a list of {"label", "source_key", "bytes", "rect"?}, cycled; `bytes` (the photo's size) finds the
photo's numeric-only metrics events (they carry no job id). Per label: the latency's percentiles and every sample,
and from the metrics events where the time went: `to start` (end_to_end_ms - latency.total_ms: the producer, the
broker hop, the consumer's fetch and the wait for a render slot), `render` (latency.render_ms) and the attempt
(latency.total_ms), and the attempt's other stages. This process's consumer asks the broker to answer fetches within
1 ms (BENCH_DRIVER_FETCH_WAIT_MS), so its own long poll adds (almost) nothing to what it measures.
"""
import json
import os
import sys
import time
import uuid

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "proto", "python"))

from confluent_kafka import Consumer, Producer  # noqa: E402
from avatar.crop.v1 import crop_metrics_pb2, crop_result_pb2  # noqa: E402
from crop_requests import crop_request, open_loop, produce  # noqa: E402


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] if ordered else 0.0


def summary(values):
    return {"n": len(values), "p50": percentile(values, 50), "p90": percentile(values, 90),
            "p99": percentile(values, 99), "max": max(values) if values else 0.0}


def main():
    brokers, requests_topic, results_topic, metrics_topic, jobs_path, rate, duration, out_path = sys.argv[1:9]
    rate, duration = float(rate), float(duration)
    jobs = json.load(open(jobs_path))
    by_bytes = {job["bytes"]: job["label"] for job in jobs}
    consumer = Consumer({"bootstrap.servers": brokers, "group.id": f"bench-latency-{uuid.uuid4()}",
                         "auto.offset.reset": "latest", "enable.auto.commit": False, "session.timeout.ms": 6000,
                         "fetch.wait.max.ms": int(os.environ.get("BENCH_DRIVER_FETCH_WAIT_MS", "1"))})
    consumer.subscribe([results_topic, metrics_topic])
    deadline = time.time() + 30
    while len(consumer.assignment()) < 2 and time.time() < deadline:
        consumer.poll(0.2)
    time.sleep(2)  # the broker's "latest" is off by a batch: let the assignment settle before producing
    producer = Producer({"bootstrap.servers": brokers, "linger.ms": 0})

    sent, latency, failures = {}, {}, 0
    stages = {}

    def receive(timeout):
        nonlocal failures
        message = consumer.poll(timeout)
        if message is None or message.error():
            return
        now = time.monotonic()
        if message.topic() == results_topic:
            result = crop_result_pb2.CropResult()
            result.ParseFromString(message.value())
            entry = sent.pop(result.job_id, None)
            if entry is None:
                return
            label, started = entry
            if result.WhichOneof("outcome") == "failure":
                failures += 1
            else:
                latency.setdefault(label, []).append((now - started) * 1000)
        else:
            sample = crop_metrics_pb2.CropMetrics()
            sample.ParseFromString(message.value())
            label = by_bytes.get(sample.source_bytes)
            if label is None or sample.finished_at.ToSeconds() < began:  # an earlier run's tail
                return
            entry = stages.setdefault(label, {})
            entry.setdefault("to_start", []).append(sample.end_to_end_ms - sample.latency.total_ms)
            entry.setdefault("attempt", []).append(sample.latency.total_ms)
            for stage in ("fetch", "probe", "render", "encode", "upload", "db"):
                entry.setdefault(stage, []).append(getattr(sample.latency, stage + "_ms"))

    count = int(rate * duration)
    began = int(time.time())
    for index in open_loop(rate, count, receive):
        job = jobs[index % len(jobs)]
        request = crop_request(job)
        sent[request.job_id] = (job["label"], time.monotonic())
        produce(producer, requests_topic, request)
    producer.flush(30)
    deadline = time.monotonic() + 120
    while sent and time.monotonic() < deadline:
        receive(0.2)
    end = time.monotonic() + 3  # the last metrics events
    while time.monotonic() < end:
        receive(0.2)
    consumer.close()

    report = {"rate": rate, "duration_s": duration, "jobs": count, "failures": failures, "missing": len(sent),
              "photos": {label: {"latency_ms": summary(values), "samples_ms": [round(v, 1) for v in values],
                                 **{key: summary(vals) for key, vals in stages.get(label, {}).items()}}
                         for label, values in latency.items()}}
    json.dump(report, open(out_path, "w"), indent=1)
    for label, entry in report["photos"].items():
        print(f"{label}: p50 {entry['latency_ms']['p50']:.0f} ms, p99 {entry['latency_ms']['p99']:.0f} ms, "
              f"to start p50 {entry.get('to_start', {}).get('p50', 0):.0f} / p99 "
              f"{entry.get('to_start', {}).get('p99', 0):.0f} ms, render p50 "
              f"{entry.get('render', {}).get('p50', 0):.0f} ms")
    sys.exit(0 if not sent and failures == 0 else 1)


if __name__ == "__main__":
    main()
