# Osprey — the two commands: `make run` and `make test`. Both install missing system packages first.
SWIFT ?= swift
# `make run` starts the proxy on 127.0.0.1:8080: signed requests only when OSPREY_SECRET is set, else unsigned ones.
ARGS ?= serve $(if $(OSPREY_SECRET),,--allow-unsigned)
# Package traits to build with: OSPREY_TRAITS=OTLP gives `osprey serve --otlp-endpoint` (swift-otel's exporter).
OSPREY_TRAITS ?=
TRAIT_FLAGS = $(if $(OSPREY_TRAITS),--traits $(OSPREY_TRAITS))
FORMAT_PATHS := Package.swift Sources Tests Benchmarks/Package.swift Benchmarks/Benchmarks Benchmarks/Sources Fuzz/Package.swift Fuzz/Sources

.PHONY: all deps build run test test-asan test-tsan test-otlp fleet fuzz bench lint format clean

all: build

## deps: install the codec -dev packages and pkg-config if missing (apt-get; prints the Homebrew line on macOS)
deps:
	@./scripts/install-deps.sh

## build: the release `osprey` executable, with the Swift runtime and Foundation linked in (--static-swift-stdlib):
## start-up 7.9 ms instead of 13.8 (no dynamic loading of them), what every short command and prefetch run pays
build: deps
	$(SWIFT) build -c release --static-swift-stdlib --product osprey $(TRAIT_FLAGS)

## run: build and run `osprey $(ARGS)`: by default the image proxy, `osprey serve` (ARGS=--help for the rest)
run: build
	"$$($(SWIFT) build -c release --show-bin-path $(TRAIT_FLAGS))/osprey" $(ARGS)

## test: build everything and run the whole suite (corpus tests skip, saying so, when ../shared/testdata is absent)
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## test-asan: the codec and test-support suites, the processors' hostile parameters, and the pixel loops of pad, extend,
## sharpen, watermark and the smart crop, under AddressSanitizer
## (separate build folder .build-asan)
test-asan: deps
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build-asan
	LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan-suppressions.txt \
	$(SWIFT) test --skip-build --sanitize=address --scratch-path .build-asan --filter 'OspreyCodecsTests|OspreyTestingTests|ProcessorParameterTests|CanvasProcessorTests|SmartCoverTests'

## test-tsan: the concurrent parts (the manager and its stress test, the prefetcher, the downloader and its queue, the
## memory cache, the memory budget, colour conversions on many threads) under ThreadSanitizer (separate
## build folder .build-tsan). OSPREY_TSAN swaps the standard library's Mutex, which TSan cannot see, for a pthread
## mutex, which it can (Sources/OspreyCodecs/Mutex+ThreadSanitizer.swift).
TSAN_FLAGS = --sanitize=thread --scratch-path .build-tsan -Xswiftc -DOSPREY_TSAN
test-tsan: deps
	$(SWIFT) build --build-tests $(TSAN_FLAGS)
	$(SWIFT) test --skip-build $(TSAN_FLAGS) \
		--filter 'ImageManager|CacheSeams|ImagePrefetcher|PublicAPI|ImageDownloaderTests|ImageDownloaderHTTPTests|DownloadQueueStateMachineTests|MemoryCacheTests|DiskCacheStagingTests|MemoryBudget|concurrentConversionsMatchSequentialOnes'

## test-otlp: osprey built with the OTLP trait against an OpenTelemetry collector stand-in and an origin: the
## client's traceparent continued and sent on to the origin, the spans exported over OTLP/HTTP (scripts/otlp-demo.py)
test-otlp: deps
	$(SWIFT) build --product osprey --traits OTLP
	python3 scripts/otlp-demo.py "$$($(SWIFT) build --show-bin-path --traits OTLP)/osprey"

## fleet: docs/deploy/nginx-fleet.conf for real, three instances behind nginx (scripts/fleet-demo.py; needs nginx)
fleet: deps
	$(SWIFT) build --product osprey
	OSPREY_BIN="$$($(SWIFT) build --show-bin-path)/osprey" python3 scripts/fleet-demo.py

## fuzz: build the libFuzzer harnesses (Fuzz/) with ASan and run each decoder's for SECONDS (default 60)
SECONDS ?= 60
fuzz: deps
	SECONDS_PER_FUZZER=$(SECONDS) ./scripts/fuzz.sh

## bench: the benchmarks (release builds, nested package in Benchmarks/): package-benchmark's suite, decode
## throughput beside djpeg, dwebp, Pillow and pyvips with the ratios the Codecs issue targets, what colour
## management costs a 12 MP decode (Display P3 to sRGB, sRGB-tagged, untagged) beside pyvips' icc_transform, AVIF
## decode, encode and thumbnails beside pyvips, Pillow, avifdec and avifenc, the
## caches' latency and scaling, downloads from a local nginx beside curl, aiohttp and URLSession, osprey prefetch and
## fetch beside curl, then ImageManager's loads from memory, disk and nginx beside a requests + Pillow loop, the
## processors' thumbnail job and resize beside Pillow and pyvips, and osprey serve beside thumbor and nginx under wrk,
## then its memory budget under 64 concurrent 49 MP PNGs
bench: deps
	cd Benchmarks && $(SWIFT) package --disable-sandbox benchmark
	python3 Benchmarks/compare_codecs.py
	python3 Benchmarks/compare_colour.py
	python3 Benchmarks/compare_modern.py
	cd Benchmarks && $(SWIFT) build -c release --product cache-benchmark && "$$($(SWIFT) build -c release --show-bin-path)/cache-benchmark"
	python3 Benchmarks/compare_downloads.py
	python3 Benchmarks/compare_prefetch.py
	python3 Benchmarks/compare_manager.py
	python3 Benchmarks/compare_processors.py
	python3 Benchmarks/compare_proxy.py
	python3 Benchmarks/compare_memory.py

## lint: check formatting and style with swift-format (configuration in .swift-format)
lint:
	$(SWIFT) format lint --strict --recursive --parallel $(FORMAT_PATHS)

## format: rewrite the sources in place to the swift-format configuration
format:
	$(SWIFT) format format --in-place --recursive --parallel $(FORMAT_PATHS)

clean:
	rm -rf .build .build-asan .build-tsan .build-fuzz Benchmarks/.build Fuzz/.build
