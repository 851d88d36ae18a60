# avatar-cropper — developer entry points. See README.md.
SHELL := /bin/bash
.DEFAULT_GOAL := build

# A locally built librdkafka (scripts/build-librdkafka.sh) wins over the system's.
export PKG_CONFIG_PATH := $(CURDIR)/.deps/librdkafka/lib/pkgconfig$(if $(PKG_CONFIG_PATH),:$(PKG_CONFIG_PATH))
SWIFT ?= swift
SWIFT_BUILD_FLAGS ?=
BIN = $(shell $(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path)/avatar-cropper

.PHONY: deps build release test test-unit services-start services-stop demo bench chaos fuzz check format clean

deps:
	@scripts/install-deps.sh

# The face detector's model goes beside the binary, where it looks for it (scripts/fetch-face-model.sh).
build: deps
	$(SWIFT) build $(SWIFT_BUILD_FLAGS)
	@scripts/fetch-face-model.sh "$$($(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path)"

release: deps
	$(SWIFT) build -c release
	@scripts/fetch-face-model.sh "$$($(SWIFT) build -c release --show-bin-path)"

# Every test, unit and integration, against real Postgres, Kafka-protocol broker and S3 started on
# 127.0.0.1; services stop afterwards. scripts/test.sh says why the suites run in three groups, and
# ends a failed run with the names of the failed tests.
test: deps
	@SWIFT="$(SWIFT)" SWIFT_BUILD_FLAGS="$(SWIFT_BUILD_FLAGS)" scripts/test.sh

# Unit tests only: no services needed (integration tests skip themselves).
test-unit: deps
	$(SWIFT) build --build-tests $(SWIFT_BUILD_FLAGS)
	@scripts/fetch-face-model.sh "$$($(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path)"
	$(SWIFT) test --skip-build $(SWIFT_BUILD_FLAGS)

services-start: deps
	@scripts/services.sh start
services-stop:
	@scripts/services.sh stop

demo: deps
	@scripts/demo.sh

# The real stack under faults: two workers, a few thousand jobs with hostile files, kills and
# restarts of workers, Postgres, broker and storage, then a DLQ replay; asserts nothing was lost
# (scripts/chaos.py). CHAOS_JOBS=N for another size.
chaos: deps
	@scripts/chaos.sh

# Render benchmark against pyvips and Pillow, the end-to-end run, the latency at low load, what the render
# helpers cost against rendering in-process, and what the face rule costs a no-pose job (bench/README.md).
bench: deps
	@scripts/bench.sh
	@scripts/bench-e2e.sh
	@scripts/bench-latency.sh
	@scripts/bench-helpers.sh
	@scripts/bench-faces.sh
	@scripts/bench-formats.sh

# The C that reads uploads under libFuzzer with ASan and UBSan (Tests/Fuzz/README.md): every harness for
# FUZZ_SECONDS on a corpus kept in .build-fuzz/, then each C file's line coverage over that corpus and
# valgrind's memcheck. `make test` runs a 60 s smoke of each (scripts/test.sh).
FUZZ_SECONDS ?= 600
fuzz: deps
	@SWIFT="$(SWIFT)" FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh run
	@SWIFT="$(SWIFT)" scripts/fuzz.sh coverage
	@SWIFT="$(SWIFT)" scripts/fuzz.sh memcheck

# Formatting and lint with the toolchain's swift-format (.swift-format: 4 spaces, 120 columns).
# Generated protobuf code (Sources/CropProtocol/Generated) is left as protoc-gen-swift writes it.
SWIFT_SOURCES = $(shell find Package.swift Sources Tests bench/Sources -name '*.swift' -not -path '*/Generated/*')
check:
	$(SWIFT) format lint --strict --parallel $(SWIFT_SOURCES)

format:
	$(SWIFT) format --in-place --parallel $(SWIFT_SOURCES)

clean:
	rm -rf .build .run out
