"""The requests: ordinary crop jobs (out of order, duplicated, under odd keys), malformed messages, forget requests,
the users forgotten with the CLI, the jobs on the attacking and mutated uploads; and their production while the
faults run."""
import os
import time
import uuid
from dataclasses import dataclass, field

from confluent_kafka import Producer

from avatar.crop.v1 import common_pb2, crop_request_pb2

from .sources import HANG
from .stack import REQUESTS


@dataclass
class Plan:
    """What the run sends, and what each job is."""
    jobs: list  # (job_id, user_id, key, bytes, headers, kind) in send order
    forgets: dict  # forget request's job id: user
    cli_forgets: list  # (seconds after the start, user)
    expected: dict = field(default_factory=dict)  # job id: kind, every job once
    source_of: dict = field(default_factory=dict)  # job id: the upload's name
    contained: list = field(default_factory=list)  # requests of the attacks on the render helper
    mutations: list = field(default_factory=list)  # requests of the mutated uploads


def plan(rng, count, sources, formats):
    jobs = plan_jobs(rng, count, sources, formats)
    forgets = plan_forgets(rng, jobs, max(1, count // 400))
    cli_forgets = plan_cli_forgets(rng, jobs, forgets.values(), max(1, count // 300))
    plan_ahead_of_forgets(rng, jobs, sources, set(forgets.values()) | {user for _, user in cli_forgets})
    result = Plan(jobs, forgets, cli_forgets)
    result.expected = {job_id: kind for job_id, _, _, _, _, kind in jobs if kind != "duplicate"}
    for job_id, _, _, body, _, kind in jobs:
        if kind == "request":
            request = crop_request_pb2.CropRequest()
            request.ParseFromString(body)
            result.source_of[job_id] = request.source_key.rsplit("/", 1)[-1]
    for name, (_, kind, _) in sources.items():
        if kind not in ("contained", "mutated"):
            continue
        request = crop_request_pb2.CropRequest(job_id=str(uuid.uuid4()), user_id=str(uuid.uuid4()),
                                               source_key="uploads/chaos/" + name)
        request.requested_at.GetCurrentTime()
        result.expected[request.job_id] = kind
        result.source_of[request.job_id] = name
        (result.contained if kind == "contained" else result.mutations).append(request)
    return result


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


def plan_ahead_of_forgets(rng, jobs, sources, users):
    """A crop request of each user to be forgotten stamped 200 s ahead (a producer whose clock runs fast, within the
    worker's 300 s skew), sent somewhere in the second half of the stream: whichever side of the forget it lands on,
    nothing of it may stay (docs/DATA.md, window 2: the tombstone covers the skew, not the forget's own stamp)."""
    photos = sorted(name for name, (_, kind, _) in sources.items() if kind == "photo")
    ahead = time.time() + 200
    for user in sorted(users):
        request = crop_request_pb2.CropRequest(job_id=str(uuid.uuid4()), user_id=user,
                                               source_key="uploads/chaos/" + rng.choice(photos))
        request.requested_at.FromNanoseconds(int(ahead * 1e9))
        jobs.insert(rng.randrange(len(jobs) // 2, len(jobs)),
                    (request.job_id, user, user.encode(), request.SerializeToString(), [], "request"))


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


def produce(brokers, plan):
    """Sends every message over about 40 s, the attacks and the mutations among them: the attacks, the mutations,
    and the hang last, on its own: it holds its worker's only render slot until its deadline, and a job queued behind
    it times out before it renders (an attack that did ended as TIMEOUT, not with its own code)."""
    jobs, contained, source_of = plan.jobs, plan.contained, plan.source_of
    producer = Producer({"bootstrap.servers": brokers, "linger.ms": 5, "acks": "all", "log_level": 2,
                         "message.timeout.ms": 120000})
    batches = {len(jobs) // 3: [r for r in contained if source_of[r.job_id] != HANG],
               len(jobs) // 2: plan.mutations,
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
    return producer.flush(180)
