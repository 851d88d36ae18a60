"""What the end-to-end drivers (e2e.py, rebalance.py, latency.py) share: the crop request for a job template
{"source_key", "pose": {"scale", "tx"?, "ty"?} | "rect": {"x", "y", "side"} | neither (no pose)}, with a fresh job
id, a fresh user and requested_at now; producing it; and an open loop's schedule."""
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proto", "python"))

from avatar.crop.v1 import crop_request_pb2  # noqa: E402

HEADERS = [("content-type", b"application/x-protobuf")]


def crop_request(job):
    request = crop_request_pb2.CropRequest(job_id=str(uuid.uuid4()), user_id=str(uuid.uuid4()),
                                           source_key=job["source_key"])
    if "pose" in job:
        request.pose.scale = job["pose"]["scale"]
        request.pose.tx = job["pose"].get("tx", 0)
        request.pose.ty = job["pose"].get("ty", 0)
    elif "rect" in job:
        request.rect.x, request.rect.y, request.rect.side = job["rect"]["x"], job["rect"]["y"], job["rect"]["side"]
    request.requested_at.GetCurrentTime()
    return request


def produce(producer, topic, request):
    """Hands `request` to the producer, keyed by its user as the app keys it."""
    producer.produce(topic, key=request.user_id.encode(), value=request.SerializeToString(), headers=HEADERS)
    producer.poll(0)


def open_loop(rate, count, receive):
    """Yields 0 ..< count, each at its time (RATE a second from now, whatever the worker is doing), calling
    receive(timeout) while it waits."""
    start = time.monotonic()
    for index in range(count):
        due = start + index / rate
        while time.monotonic() < due:
            receive(max(0.0, min(0.02, due - time.monotonic())))
        yield index
