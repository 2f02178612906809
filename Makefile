# The front door. On a fresh Debian 12 machine, as root:
#   make demo    install what is missing, build, run the demo
#   make test    install what is missing, build, run every test
BUILD ?= build
TORCH ?= ON
JOBS  ?= $(shell nproc)

.PHONY: deps build demo test test-unit bench clean

deps:
	scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DFERRY_WITH_TORCH=$(TORCH) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	scripts/demo.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900

# Without root-only testbed tests.
test-unit: build
	cd $(BUILD) && ctest --output-on-failure -LE testbed

bench: build
	scripts/install-deps.sh --bench
	tests/bench/run_all.sh $(BUILD)

clean:
	rm -rf $(BUILD)
