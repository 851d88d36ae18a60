"""A producer written in Python: builds a CropRequest with the classes generated from
proto/ and puts it on the requests topic with confluent-kafka, as another team's
service would, with a W3C `traceparent` header that starts the job's trace.
Usage: produce_request.py BROKERS TOPIC JOB_ID USER_ID SOURCE_KEY"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "proto", "python"))

from confluent_kafka import Producer  # noqa: E402
from avatar.crop.v1 import crop_request_pb2  # noqa: E402

brokers, topic, job_id, user_id, source_key = sys.argv[1:6]
request = crop_request_pb2.CropRequest(job_id=job_id, user_id=user_id, source_key=source_key)
request.pose.scale = 1.0
request.pose.tx = 12.5
request.requested_at.GetCurrentTime()
request.extra_sizes.append(80)
request.want_blurhash = True

# W3C trace context: this producer starts the trace; the worker's spans and the result continue it.
traceparent = f"00-{os.urandom(16).hex()}-{os.urandom(8).hex()}-01"

errors = []
producer = Producer({"bootstrap.servers": brokers})
producer.produce(topic, key=user_id.encode(), value=request.SerializeToString(),
                 headers=[("content-type", b"application/x-protobuf"), ("traceparent", traceparent.encode())],
                 on_delivery=lambda err, msg: errors.append(err) if err else None)
producer.flush(30)
if errors:
    sys.exit(f"delivery failed: {errors[0]}")
print(job_id)
