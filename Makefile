# The front door. On a fresh Debian 12 machine, as root:
#   make demo    install what building and the demo need, build ferry and the demo's
#                programs only (not the tests and benchmarks), run the demo
#   make test    install everything the tests need too, build everything, run every
#                test and, beside them, the torch-free unit and fuzz tests again under
#                ASan + UBSan (make test-sanitize)
#   make check   the house's limits on the sources (no more long functions than now)
#   make package a Debian package of what `make build` built (BUILD/ferry_VERSION_ARCH.deb)
BUILD ?= build
SAN_BUILD ?= build-asan
TORCH ?= ON
JOBS  ?= $(shell nproc)

.PHONY: deps deps-test configure build demo test test-unit test-sanitize sanitize bench package check clean

deps:
	scripts/install-deps.sh

# The tests' packages too: sshd, chromium, Slurm, node and the npm references.
deps-test:
	scripts/install-deps.sh --test

configure: deps
	cmake -S . -B $(BUILD) -DFERRY_WITH_TORCH=$(TORCH) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# What scripts/demo.sh runs: ferry (which brings the eval plugin and worker), the
# agent, and the demo's data maker and trainers: 165 of the 287 files `make build` compiles.
DEMO_TARGETS = ferry ferry-agent dflash-tiny-data dflash-train-target dflash-train-drafter
demo: configure
	cmake --build $(BUILD) -j$(JOBS) --target $(DEMO_TARGETS)
	scripts/demo.sh $(BUILD)

# The sanitizer's build and tests run beside the suite, at nice 19 (scripts/test-all.sh).
test: deps-test build
	scripts/test-all.sh $(BUILD) $(SAN_BUILD) $(JOBS)

# The torch-free parts built with AddressSanitizer and UndefinedBehaviorSanitizer:
# only what the `unit` and `fuzz` tests need, so CI stays short.
SAN_TARGETS = protocol_test transfer_test agents_test ferry-agent workflows_test orchestrator_test \
              report_unit_test checkpoint_scan_test fuzz_test log_tap_env_test checkpoint_listing_test \
              eval_inputs_test eval_progress_reader_test stage_spec_test eval_merge_stage_test relay_copy_unit_test \
              scheduler_unit_test hosts_check_unit_test host_lanes_unit_test model_fingerprint_test \
              stage_factory_test
test-sanitize: deps-test
	$(MAKE) sanitize
sanitize:
	cmake -S . -B $(SAN_BUILD) -DFERRY_WITH_TORCH=OFF -DFERRY_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(SAN_BUILD) -j$(JOBS) --target $(SAN_TARGETS)
	cd $(SAN_BUILD) && ctest --output-on-failure -L 'unit|fuzz' --timeout 900

# Without root-only testbed tests.
test-unit: deps-test build
	cd $(BUILD) && ctest --output-on-failure -LE testbed

package: build
	cd $(BUILD) && cpack -G DEB

bench: deps-test build
	scripts/install-deps.sh --bench
	tests/bench/run_all.sh $(BUILD)

# The lines the house holds: no more functions of 80 lines or more than there are
# now (scripts/long-functions.sh lists them; lower the count when one is split).
LONG_FUNCTIONS_MAX = 3
check:
	scripts/long-functions.sh $(LONG_FUNCTIONS_MAX)

clean:
	rm -rf $(BUILD) $(SAN_BUILD)
