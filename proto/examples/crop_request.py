#!/usr/bin/env python3
"""Builds an avatar.crop.v1.CropRequest with the generated Python classes and prints it.

A producer example, and the Python half of the interoperability test
(Tests/CropProtocolTests/PythonInteropTests.swift): the Swift test runs this script and
decodes what it prints.

  crop_request.py --job-id J --user-id U --source-key K [--pose S,TX,TY[,MASK,SIGMA] | --rect X,Y,SIDE]
                  [--reference WxH] [--size N] [--jpeg] [--quality N] [--extra N ...] [--blurhash]
                  [--background #RRGGBB] [--requested-at SECONDS[.FRACTION]] [--json]
      prints the request as hex of its binary encoding, or (--json) as the protobuf JSON mapping.
  crop_request.py --descriptors
      prints "file-name hex" per proto file: the schema compiled into the committed modules.

Needs the `protobuf` package (scripts/dev/requirements.txt).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from google.protobuf import json_format  # noqa: E402

from avatar.crop.v1 import common_pb2, crop_metrics_pb2, crop_request_pb2, crop_result_pb2  # noqa: E402


def floats(text, count):
    values = [float(v) for v in text.split(",")]
    if len(values) not in count:
        raise argparse.ArgumentTypeError(f"expected {' or '.join(map(str, count))} comma-separated numbers")
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--descriptors", action="store_true")
    parser.add_argument("--job-id")
    parser.add_argument("--user-id")
    parser.add_argument("--source-key")
    geometry = parser.add_mutually_exclusive_group()
    geometry.add_argument("--pose", type=lambda t: floats(t, (3, 5)))
    geometry.add_argument("--rect", type=lambda t: floats(t, (3,)))
    parser.add_argument("--reference")
    parser.add_argument("--size", type=int)
    parser.add_argument("--jpeg", action="store_true")
    parser.add_argument("--quality", type=int)
    parser.add_argument("--extra", type=int, action="append", default=[])
    parser.add_argument("--blurhash", action="store_true")
    parser.add_argument("--background")
    parser.add_argument("--requested-at", type=float)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    if args.descriptors:
        for module in (common_pb2, crop_request_pb2, crop_result_pb2, crop_metrics_pb2):
            print(module.DESCRIPTOR.name, module.DESCRIPTOR.serialized_pb.hex())
        return

    request = crop_request_pb2.CropRequest(job_id=args.job_id or "", user_id=args.user_id or "",
                                           source_key=args.source_key or "")
    if args.pose:
        request.pose.scale, request.pose.tx, request.pose.ty = args.pose[:3]
        if len(args.pose) == 5:
            request.pose.mask_diameter_pt, request.pose.screen_scale = args.pose[3:]
    if args.rect:
        request.rect.x, request.rect.y, request.rect.side = args.rect
    if args.reference:
        width, height = args.reference.lower().split("x")
        request.reference_width, request.reference_height = int(width), int(height)
    if args.size is not None:
        request.output.size = args.size
    if args.jpeg:
        request.output.format = common_pb2.IMAGE_FORMAT_JPEG
    if args.quality is not None:
        request.output.quality = args.quality
    request.extra_sizes.extend(args.extra)
    request.want_blurhash = args.blurhash
    if args.background is not None:
        request.background = args.background
    if args.requested_at is not None:
        seconds = int(args.requested_at)
        request.requested_at.seconds = seconds
        request.requested_at.nanos = round((args.requested_at - seconds) * 1e9)
    else:
        request.requested_at.GetCurrentTime()

    if args.json:
        print(json_format.MessageToJson(request))
    else:
        print(request.SerializeToString().hex())


if __name__ == "__main__":
    main()
