# avatar-cropper — developer entry points. `make help` lists them; README.md and docs/DEVELOPMENT.md say more.
# A target's `## ` comment is its line in `make help`.
SHELL := /bin/bash
.DEFAULT_GOAL := build

# A locally built librdkafka (scripts/dev/build-librdkafka.sh) wins over the system's.
export PKG_CONFIG_PATH := $(CURDIR)/.deps/librdkafka/lib/pkgconfig$(if $(PKG_CONFIG_PATH),:$(PKG_CONFIG_PATH))
SWIFT ?= swift
SWIFT_BUILD_FLAGS ?=

.PHONY: help deps build release test test-unit services-start services-stop demo bench bench-all chaos fuzz check \
	format clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/\1\t\2/' | \
		awk -F'\t' '{ printf "  make %-16s %s\n", $$1, $$2 }'

deps: ## install what is missing: Debian packages, libheif, librdkafka, the tools' venv (scripts/dev/install-deps.sh)
	@scripts/dev/install-deps.sh

# The face detector's model goes beside the binary, where it looks for it (scripts/fetch-face-model.sh).
build: deps ## build the worker (debug), the face model beside it (the default target)
	$(SWIFT) build $(SWIFT_BUILD_FLAGS)
	@scripts/fetch-face-model.sh "$$($(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path)"

release: deps ## build the worker in release, the face model beside it
	$(SWIFT) build -c release
	@scripts/fetch-face-model.sh "$$($(SWIFT) build -c release --show-bin-path)"

# Every test, unit and integration, against real Postgres, Kafka-protocol broker and S3 started on
# 127.0.0.1; services stop afterwards. scripts/test.sh says why the suites run in three groups, and
# ends a failed run with the names of the failed tests.
test: deps ## every test against real services on 127.0.0.1, the fuzz smoke and the link check (what CI runs)
	@SWIFT="$(SWIFT)" SWIFT_BUILD_FLAGS="$(SWIFT_BUILD_FLAGS)" scripts/test.sh

# Integration tests skip themselves without services.
test-unit: deps ## the unit tests only: no services needed
	$(SWIFT) build --build-tests $(SWIFT_BUILD_FLAGS)
	@scripts/fetch-face-model.sh "$$($(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path)"
	$(SWIFT) test --skip-build $(SWIFT_BUILD_FLAGS)

services-start: deps ## start Postgres, the broker and S3 on 127.0.0.1 (writes .run/env)
	@scripts/services.sh start
services-stop: ## stop them
	@scripts/services.sh stop

demo: deps ## run the worker on sample photos and draw out/demo/contact-sheet.png
	@scripts/demo.sh

# Two workers, a few thousand jobs with hostile files, kills and restarts of workers, Postgres, broker
# and storage, then a DLQ replay; asserts nothing was lost (scripts/chaos/). CHAOS_JOBS=N for another size.
chaos: deps ## the real stack under faults, checking the guarantees (CHAOS_JOBS=N)
	@scripts/chaos.sh

# bench/README.md says what each step measures and how long it takes; bench/RESULTS.md holds the figures.
bench: deps ## the quick render bench against pyvips, Pillow and the floor (about 6 minutes)
	@bench/bench.sh

bench-all: deps ## every bench step: render, one job in flight, end to end, latency, helpers, face rule, formats (about 80 minutes)
	@bench/bench.sh
	@bench/bench.sh tiles
	@bench/bench-e2e.sh
	@bench/bench-latency.sh
	@bench/bench-helpers.sh
	@bench/bench-faces.sh
	@bench/bench-formats.sh

# The C that reads uploads under libFuzzer with ASan and UBSan (Tests/Fuzz/README.md): every harness for
# FUZZ_SECONDS on a corpus kept in .build-fuzz/, then each C file's line coverage over that corpus and
# valgrind's memcheck. `make test` runs a 60 s smoke of each (scripts/test.sh).
FUZZ_SECONDS ?= 600
fuzz: deps ## fuzz the C that reads uploads for FUZZ_SECONDS each, then coverage and memcheck
	@SWIFT="$(SWIFT)" FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh run
	@SWIFT="$(SWIFT)" scripts/fuzz.sh coverage
	@SWIFT="$(SWIFT)" scripts/fuzz.sh memcheck

# Formatting and lint with the toolchain's swift-format (.swift-format: 4 spaces, 120 columns).
# Generated protobuf code (Sources/CropProtocol/Generated) is left as protoc-gen-swift writes it.
SWIFT_SOURCES = $(shell find Package.swift Sources Tests bench/Package.swift bench/Sources -name '*.swift' \
	-not -path '*/Generated/*')
check: ## lint the Swift sources, and fail on a relative Markdown link to a missing file or heading
	$(SWIFT) format lint --strict --parallel $(SWIFT_SOURCES)
	@scripts/check-links.py

format: ## format the Swift sources in place
	$(SWIFT) format --in-place --parallel $(SWIFT_SOURCES)

clean: ## remove build outputs, services' data and out/
	rm -rf .build bench/.build .run out
