"""Rebalance benchmark driver: a steady open-loop load of crop requests while the shell scales the
worker group (bench/bench-e2e.sh), recording when every result event arrives.

Usage:
  rebalance.py drive BROKERS REQUESTS_TOPIC RESULTS_TOPIC JOBS_JSON RATE DURATION_S OUT_JSON
  rebalance.py report STEPS_FILE RUN_JSON [RUN_JSON ...]

`drive` produces RATE jobs/s for DURATION_S seconds (each job a new user, so any avatar_version above 1
is a double bump), keeps reading results until every job has one (or 300 s pass), and writes every
arrival, duplicates included, with wall-clock times. `report` reads the scale steps the shell wrote
(`STRATEGY WORKERS EPOCH_SECONDS` lines) and prints, per run: the longest gap without any result, the
jobs redone (results beyond the first per job), jobs lost, and for each step the results per second in the
STEP_WINDOW_S seconds after it and in its slowest DIP_WINDOW_S seconds, against the offered rate (the dip)."""
import json
import os
import sys
import time
import uuid

STEP_WINDOW_S = 10.0
DIP_WINDOW_S = 2.0


def drive(brokers, requests_topic, results_topic, jobs_path, rate, duration, out_path):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "proto", "python"))
    from confluent_kafka import Consumer, Producer
    from avatar.crop.v1 import crop_result_pb2
    from crop_requests import crop_request, open_loop, produce

    templates = json.load(open(jobs_path))
    consumer = Consumer({"bootstrap.servers": brokers, "group.id": f"bench-rebalance-{uuid.uuid4()}",
                         "auto.offset.reset": "latest", "enable.auto.commit": False,
                         "session.timeout.ms": 6000})
    consumer.subscribe([results_topic])
    deadline = time.time() + 30
    while not consumer.assignment() and time.time() < deadline:
        consumer.poll(0.2)
    producer = Producer({"bootstrap.servers": brokers, "linger.ms": 0})

    sent, arrivals = {}, []

    def receive(timeout):
        message = consumer.poll(timeout)
        if message is None or message.error():
            return
        result = crop_result_pb2.CropResult()
        result.ParseFromString(message.value())
        if result.job_id in sent:
            arrivals.append({"t": time.time(), "job": result.job_id, "outcome": result.WhichOneof("outcome")})

    total = int(rate * duration)
    for index in open_loop(rate, total, receive):
        request = crop_request(templates[index % len(templates)])
        sent[request.job_id] = time.time()
        produce(producer, requests_topic, request)
    producer.flush(60)
    end = time.monotonic() + 300
    while len({a["job"] for a in arrivals}) < len(sent) and time.monotonic() < end:
        receive(0.5)
    # Late duplicates (a redelivered job's second result) arrive within a drain or two.
    linger = time.monotonic() + 5
    while time.monotonic() < linger:
        receive(0.2)
    consumer.close()
    json.dump({"rate": rate, "duration_s": duration, "sent": sent, "arrivals": arrivals}, open(out_path, "w"))


def report(steps_path, runs):
    steps = {}
    for line in open(steps_path):
        strategy, workers, at = line.split()
        steps.setdefault(strategy, []).append((int(workers), float(at)))
    out = []
    for path in runs:
        run = json.load(open(path))
        strategy = os.path.basename(path).split(".")[0]
        arrivals = sorted(run["arrivals"], key=lambda a: a["t"])
        firsts, seen = [], set()
        for a in arrivals:
            if a["job"] not in seen:
                seen.add(a["job"])
                firsts.append(a)
        times = [a["t"] for a in arrivals]
        first_sent, last_sent = min(run["sent"].values()), max(run["sent"].values())
        # The longest silence while jobs were being offered (and until the last one's result).
        window = [first_sent] + [t for t in times if t >= first_sent]
        gaps = [b - a for a, b in zip(window, window[1:])]
        per_step = []
        marks = steps.get(strategy, [])
        for index, (workers, at) in enumerate(marks[1:], start=1):
            until = marks[index + 1][1] if index + 1 < len(marks) else (times[-1] if times else at)
            done = sum(1 for a in firsts if at <= a["t"] < at + STEP_WINDOW_S)
            inside = [at] + [t for t in times if at <= t <= until]
            silent = [b - a for a, b in zip(inside, inside[1:])]
            # The dip: the slowest DIP_WINDOW_S seconds within STEP_WINDOW_S of the step, against the offered rate
            # (a backlog caught up later hides a stall in a longer average).
            starts = [at + i * 0.25 for i in range(int((STEP_WINDOW_S - DIP_WINDOW_S) / 0.25) + 1)]
            slowest = min(sum(1 for a in firsts if t <= a["t"] < t + DIP_WINDOW_S) for t in starts) / DIP_WINDOW_S
            per_step.append({"to_workers": workers, "results_per_s_10s": round(done / STEP_WINDOW_S, 2),
                             "slowest_2s_per_s": round(slowest, 2), "offered_per_s": run["rate"],
                             "dip": round(max(0.0, 1 - slowest / run["rate"]), 3),
                             "longest_gap_s": round(max(silent) if silent else 0.0, 2)})
        out.append({
            "strategy": strategy, "rate_jobs_per_s": run["rate"], "jobs": len(run["sent"]),
            "lost": len(run["sent"]) - len(seen), "redone": len(arrivals) - len(firsts),
            "failures": sum(1 for a in firsts if a["outcome"] == "failure"),
            "longest_gap_s": round(max(gaps) if gaps else 0.0, 2),
            "span_s": round(last_sent - first_sent, 1), "steps": per_step})
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    if sys.argv[1] == "drive":
        b, rq, rs, jobs, rate, duration, out = sys.argv[2:9]
        drive(b, rq, rs, jobs, float(rate), float(duration), out)
    else:
        report(sys.argv[2], sys.argv[3:])
