# Osprey — the two commands: `make run` and `make test`. Both install missing system packages first.
SWIFT ?= swift
ARGS ?= --help
FORMAT_PATHS := Package.swift Sources Tests Benchmarks/Package.swift Benchmarks/Benchmarks

.PHONY: all deps build run test bench lint format clean

all: build

## deps: install the codec -dev packages and pkg-config if missing (apt-get; prints the Homebrew line on macOS)
deps:
	@./scripts/install-deps.sh

## build: the release `osprey` executable
build: deps
	$(SWIFT) build -c release --product osprey

## run: build and run `osprey $(ARGS)` (ARGS defaults to --help)
run: build
	"$$($(SWIFT) build -c release --show-bin-path)/osprey" $(ARGS)

## test: build everything and run the whole suite (corpus tests skip, saying so, when ../shared/testdata is absent)
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## bench: the benchmarks (release build, nested package in Benchmarks/)
bench: deps
	cd Benchmarks && $(SWIFT) package --disable-sandbox benchmark

## lint: check formatting and style with swift-format (configuration in .swift-format)
lint:
	$(SWIFT) format lint --strict --recursive --parallel $(FORMAT_PATHS)

## format: rewrite the sources in place to the swift-format configuration
format:
	$(SWIFT) format format --in-place --recursive --parallel $(FORMAT_PATHS)

clean:
	rm -rf .build Benchmarks/.build
