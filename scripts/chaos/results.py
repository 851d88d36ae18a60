"""The result events, the newest record under each key of the (compacted) results topic, and the metrics records,
read from the beginning of their topics."""
import threading
import uuid

from confluent_kafka import Consumer, KafkaException

from avatar.crop.v1 import crop_metrics_pb2, crop_result_pb2

from .stack import METRICS, RESULTS


class Results:
    """Every result event, by job id, and every metrics record (they carry no id), read from the beginning of their
    topics."""

    def __init__(self, brokers):
        self.by_job = {}
        # The newest record of each key on the results topic: its value, None for a null (what compaction keeps).
        self.newest_by_key = {}
        self.metrics = []
        self.lock = threading.Lock()
        self.stopping = False
        self.consumer = Consumer({
            "bootstrap.servers": brokers, "group.id": f"chaos-results-{uuid.uuid4()}",
            "auto.offset.reset": "earliest", "enable.auto.commit": False, "session.timeout.ms": 6000,
            "log_level": 2,  # the broker restart is expected: no connection-refused noise
        })
        # The consumer is used from its own thread only (its calls block each other); joining is signalled.
        self.joined = threading.Event()
        self.consumer.subscribe([RESULTS, METRICS], on_assign=lambda consumer, partitions: self.joined.set())
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
            if message.topic() == RESULTS and message.key() is not None:
                with self.lock:
                    self.newest_by_key[message.key().decode()] = message.value()
            record = (crop_metrics_pb2.CropMetrics() if message.topic() == METRICS
                      else crop_result_pb2.CropResult())
            try:
                record.ParseFromString(message.value())
            except Exception:  # noqa: BLE001 - a record that does not parse is reported by the checks
                continue
            with self.lock:
                if message.topic() == METRICS:
                    self.metrics.append(record)
                else:
                    self.by_job.setdefault(record.job_id, []).append(record)

    def snapshot(self):
        with self.lock:
            return {job: list(results) for job, results in self.by_job.items()}

    def newest_results(self):
        with self.lock:
            return dict(self.newest_by_key)

    def metrics_snapshot(self):
        with self.lock:
            return list(self.metrics)

    def stop(self):
        self.stopping = True
        self.thread.join(5)
        if not self.thread.is_alive():
            self.consumer.close()


def outcome(result):
    if result.WhichOneof("outcome") == "failure":
        return result.failure.error_code
    return crop_result_pb2.CropResult.Disposition.Name(result.success.disposition).replace("DISPOSITION_", "")


def stages_past_total(records):
    """The metrics records whose stages add up to more than the attempt's total (docs/ARCHITECTURE.md §3, "Where a
    job's time goes": the stages of one job never overlap and lie within it), beyond a nanosecond of rounding."""
    past = []
    for record in records:
        latency = record.latency
        stages = (latency.fetch_ms + latency.probe_ms + latency.render_ms + latency.encode_ms + latency.upload_ms
                  + latency.db_ms)
        if stages > latency.total_ms + 1e-6:
            past.append(f"stages {stages:.3f} ms > total {latency.total_ms:.3f} ms")
    return past
