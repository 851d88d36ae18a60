"""The result events, read from the beginning of the results topic."""
import threading
import uuid

from confluent_kafka import Consumer, KafkaException

from avatar.crop.v1 import crop_result_pb2

from .stack import RESULTS


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
