"""A minimal OTLP/HTTP trace receiver for the tracing test (Tests/AvatarWorkerTests/WorkerTracingTests.swift).

Listens on 127.0.0.1 (port 0: any free one, printed as the first line of standard output), accepts
`POST /v1/traces` bodies in OTLP protobuf, decodes them with the official `opentelemetry-proto` package, and
appends each span as one JSON line to the file named on the command line: ids in lower-case hex, name, kind,
start/end in nanoseconds, status, attributes and the resource's attributes. Answers with an empty
ExportTraceServiceResponse, as a collector does. Stops on SIGTERM.

    python otlp_receiver.py SPANS.jsonl [PORT]
"""

import json
import os
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def value(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in any_value.kvlist_value.values}
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind) if kind else None


def attributes(pairs):
    return {kv.key: value(kv.value) for kv in pairs}


class Receiver(BaseHTTPRequestHandler):
    spans_path = ""

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_response(404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        lines = []
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    lines.append(json.dumps({
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": span.kind,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "status": {"code": span.status.code, "message": span.status.message},
                        "attributes": attributes(span.attributes),
                        "events": [{"name": e.name, "attributes": attributes(e.attributes)} for e in span.events],
                        "links": [{"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex()} for l in span.links],
                        "resource": resource,
                    }))
        with open(self.spans_path, "a", encoding="utf-8") as spans:
            for line in lines:
                spans.write(line + "\n")
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format, *args):
        pass


def main():
    Receiver.spans_path = sys.argv[1]
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Receiver)
    # At once: a handler thread may still hold a keep-alive connection that a clean shutdown would wait for.
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    # A process started from a test's thread may inherit a mask that blocks SIGTERM.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
