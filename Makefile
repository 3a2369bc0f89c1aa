# transferd — the two commands: `make run` and `make test`.
LISTEN   ?= 127.0.0.1:8080
DATA_DIR ?= ./transferd-data
ARGS     ?=
SWIFT    ?= swift
RELEASE  := .build/release/transferd
CTL      := .build/release/transferctl

.PHONY: run build deps man test unit integration sanitize asan tsan deploy-check crash crash-cluster bench bench-cluster bench-wan fuzz client screenshots clean

## make run: install missing system libraries, build, start transferd on $(LISTEN).
run: build
	$(RELEASE) --listen $(LISTEN) --data-dir $(DATA_DIR) $(ARGS)

# The service and its command line (transferctl builds the generated TransferdClient with it).
build: deps
	$(SWIFT) build -c release --product transferd
	$(SWIFT) build -c release --product transferctl

deps:
	@scripts/install-deps.sh build

## make test: every test — Swift unit and in-process server tests, then the same tests under
## AddressSanitizer and ThreadSanitizer (`make sanitize`, both in full: they fit CI's budget, about
## 7 minutes together on 2 cores from empty scratch paths: ASan 3 min build + 40 s tests, TSan
## 2.5 min + 45 s), each fuzz target for FUZZ_CI_SECONDS (a 2-minute build, then 8 s each), then
## the integration tests that run the release binary against real servers started by the tests
## themselves. The Swift tests run beside a throwaway PostgreSQL (scripts/with-postgres.sh), so the
## store conformance suite and the PostgreSQL store's own tests run against it too.
FUZZ_CI_SECONDS ?= 8
test: build
	@scripts/install-deps.sh test
	scripts/with-postgres.sh $(SWIFT) test
	$(MAKE) sanitize
	SWIFT=$(SWIFT) scripts/fuzz.sh $(FUZZ_CI_SECONDS)
	TRANSFERD_BINARY=$(abspath $(RELEASE)) TRANSFERCTL_BINARY=$(abspath $(CTL)) python3 -m pytest -q Tests/integration

unit: deps
	@scripts/install-deps.sh test
	scripts/with-postgres.sh $(SWIFT) test

integration: build
	@scripts/install-deps.sh test
	TRANSFERD_BINARY=$(abspath $(RELEASE)) TRANSFERCTL_BINARY=$(abspath $(CTL)) python3 -m pytest -q Tests/integration

## make screenshots: the web console's main views as docs/console-*.png, taken in Debian's headless
## Chromium by the harness test_console.py uses, against a transferd with a few live sessions.
screenshots: build
	@scripts/install-deps.sh test
	cd Tests/integration && TRANSFERD_BINARY=$(abspath $(RELEASE)) python3 console_screenshots.py $(abspath docs)

## make sanitize: `swift test` under AddressSanitizer (with LeakSanitizer), then under
## ThreadSanitizer, each built in its own scratch path (.build-asan, .build-tsan); fails on a
## failing test or on any report. Suppressions, each with its reason: Tests/sanitizers/.
## `make asan` / `make tsan` run one of them.
sanitize: deps
	SWIFT=$(SWIFT) scripts/with-postgres.sh scripts/sanitize.sh address
	SWIFT=$(SWIFT) scripts/with-postgres.sh scripts/sanitize.sh thread

asan: deps
	SWIFT=$(SWIFT) scripts/with-postgres.sh scripts/sanitize.sh address

tsan: deps
	SWIFT=$(SWIFT) scripts/with-postgres.sh scripts/sanitize.sh thread

## make deploy-check: lint and validate Dockerfile and deploy/, and start the binary as the image would.
deploy-check: build
	@scripts/install-deps.sh test
	TRANSFERD_BINARY=$(abspath $(RELEASE)) python3 -m pytest -q Tests/integration/test_deploy_files.py Tests/integration/test_deploy_cluster_files.py Tests/integration/test_container_start.py

## make crash: the crash harness's long form (ROUNDS rounds of kill -9 under load; `make test`
## runs a short one). SEED= repeats a run.
ROUNDS ?= 200
crash: build
	@scripts/install-deps.sh test
	TRANSFERD_BINARY=$(abspath $(RELEASE)) python3 Tests/crash/crash_harness.py --rounds $(ROUNDS) $(if $(SEED),--seed $(SEED))

## make crash-cluster: the same in cluster mode — three replicas on a throwaway PostgreSQL, a random
## one killed with SIGKILL each round (CLUSTER_ROUNDS rounds).
CLUSTER_ROUNDS ?= 100
crash-cluster: build
	@scripts/install-deps.sh test
	TRANSFERD_BINARY=$(abspath $(RELEASE)) python3 Tests/crash/cluster_crash_harness.py --rounds $(CLUSTER_ROUNDS) $(if $(SEED),--seed $(SEED))

## make bench: the benchmark scripts in bench/ (they install nginx, wrk, curl, aria2 if missing),
## each printing ratios against anchors measured in the same run.
BENCHES ?= http downloads uploads webhooks restart memory small hostile
bench: build
	@for b in $(BENCHES); do echo "== bench/$$b.sh"; bench/$$b.sh || exit 1; done

## make bench-cluster: cluster mode's bars (bench/cluster.sh): three replicas on a throwaway
## PostgreSQL — batch submission across them, a task GET on each against nginx, and how soon a
## replica killed with kill -9 has its transfers continue on another. Not in BENCHES: it needs a
## transferd with --database.
bench-cluster: build
	bench/cluster.sh

## make bench-wan: downloads and uploads over an emulated long, lossy 1 Gbit/s link (bench/wan.sh,
## as root: two network namespaces, tbf, iptables loss, an NFQUEUE delay line): transferd against
## curl and aria2c -x16 at four links, a 3 s outage, and uploads cut at 50%. Not in BENCHES: it
## needs root and takes 15–20 minutes (BENCH_WAN_SIZE, BENCH_ONLY=links|uploads for less).
bench-wan: build
	bench/wan.sh

## make fuzz: build the libFuzzer targets (Sources/Fuzz*) and run each for SECONDS seconds from
## its seed corpus, printing each one's execution count; fails on a crash (Tests/fuzz/README.md).
SECONDS ?= 60
fuzz: deps
	SWIFT=$(SWIFT) scripts/fuzz.sh $(SECONDS)

## make man: the manual pages of transferctl and transferd (man/transferctl.1, man/transferd.1),
## generated from the commands' own definitions by swift-argument-parser's generate-manual plugin
## (it builds the release products first). Read one with `man -l man/transferctl.1`.
man: deps
	$(SWIFT) package generate-manual
	mkdir -p man
	cp .build/plugins/GenerateManual/outputs/transferctl/transferctl.1 .build/plugins/GenerateManual/outputs/transferd/transferd.1 man/

## make client: regenerate the Swift client (Sources/TransferdClient/Generated) from openapi.yaml
## with swift-openapi-generator, pinned in clients/swift/Package.swift and built there once, and
## record the document's digest (test_generated_swift_client.py fails when it no longer matches).
GENERATED_CLIENT := Sources/TransferdClient/Generated
client:
	$(SWIFT) build -c release --package-path clients/swift --scratch-path .build-openapi-generator --product swift-openapi-generator
	rm -rf $(GENERATED_CLIENT) && mkdir -p $(GENERATED_CLIENT)
	.build-openapi-generator/release/swift-openapi-generator generate openapi.yaml \
		--config clients/swift/openapi-generator-config.yaml --output-directory $(GENERATED_CLIENT)
	cat openapi.yaml clients/swift/openapi-generator-config.yaml | sha256sum | cut -d' ' -f1 > clients/swift/openapi.sha256

clean:
	rm -rf man .build .build-asan .build-tsan .build-fuzz .build-openapi-generator
