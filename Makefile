# lockharness: `make setup` once, then `make test`.
GO    ?= go
BIN   := bin/harness
SHIM  := bin/libclockshim.so
SUDO  := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
PKGS  := redis-server redis-sentinel redis-tools chromium python3-redis python3-psycopg2 postgresql etcd-server

IMAGE ?= lockharness/redis:local
# The harness's own image (make image), tagged with the commit and latest.
HARNESS_IMAGE ?= lockharness/harness
# The checkout the binary is built from, for `harness version` and results.json.
COMMIT  := $(shell git describe --always --dirty 2>/dev/null)
LDFLAGS := -X github.com/lockharness/lockharness/internal/version.commit=$(COMMIT)

.PHONY: setup deps build example image docker-image docker-clean test test-times test-short fuzz testdata mutants lint bench bench-check bench-soak bench-ops bench-explore regressions repro-failover repro suite suite-full report serve clean

## setup: install Redis, etcd (Debian's etcd-server, its service not started: RUNLEVEL=1) and PostgreSQL (and Chromium, for the page tests) and gcc (for the clock shim) from Debian's packages when missing, build bin/harness and, when a Docker engine answers, the node image
setup: deps build
	@if docker info >/dev/null 2>&1; then $(MAKE) --no-print-directory docker-image; \
	else echo "no Docker engine answers: skipping the node image; the docker backend's tests will skip"; fi

deps:
	@if command -v redis-server >/dev/null && command -v redis-sentinel >/dev/null && command -v redis-cli >/dev/null && command -v chromium >/dev/null && /usr/bin/python3 -c 'import redis, psycopg2' 2>/dev/null && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && command -v etcd >/dev/null; then \
		echo "redis: $$(redis-server --version | cut -d' ' -f3); $$(chromium --version 2>/dev/null); redis-py $$(/usr/bin/python3 -c 'import redis; print(redis.__version__)'); postgres $$(ls /usr/lib/postgresql | tail -1); etcd $$(etcd --version | sed -n 's/^etcd Version: //p')"; \
	else \
		echo "installing $(PKGS) from Debian's packages"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq $(PKGS); \
	fi
	@if command -v gcc >/dev/null; then \
		echo "gcc: $$(gcc -dumpfullversion)"; \
	else \
		echo "installing gcc from Debian's packages (the clock shim needs it)"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev; \
	fi
	$(GO) mod download

## build: compile the harness into bin/harness and the clock shim into bin/libclockshim.so
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/harness
	@mkdir -p bin
	gcc -shared -fPIC -O2 -Wall -o $(SHIM) internal/clockshim/csrc/clockshim.c -ldl

## image: build the harness's own image ($(HARNESS_IMAGE):COMMIT and :latest) FROM scratch: the harness, the clock shim, redis-server, PostgreSQL, python3 with redis-py and psycopg2, /bin/sh and their libraries, from the host
image: build
	docker/harness/rootfs.sh docker/harness/rootfs $(BIN) $(SHIM)
	@out=$$(docker build -q -t $(HARNESS_IMAGE):$(COMMIT) -t $(HARNESS_IMAGE):latest docker/harness 2>&1) || { echo "$$out"; exit 1; }
	@v=$$(docker run --rm --network none $(HARNESS_IMAGE):$(COMMIT) version) || { echo "$$v"; exit 1; }; \
	echo "image $(HARNESS_IMAGE):$(COMMIT) (and :latest), $$(( $$(docker image inspect -f '{{.Size}}' $(HARNESS_IMAGE):$(COMMIT)) / 1000000 )) MB:"; echo "$$v" | sed 's/^/  /'

## docker-image: build the docker backend's node image ($(IMAGE)) FROM scratch out of the host's redis-server and the libraries it loads
docker-image: build
	docker/rootfs.sh docker/rootfs $(SHIM)
	@out=$$(docker build -q -t $(IMAGE) docker 2>&1) || { echo "$$out"; exit 1; }
	@v=$$(docker run --rm --network none $(IMAGE) --version) || exit 1; \
	echo "image $(IMAGE): redis-server $$(echo "$$v" | sed -n 's/.*v=\([^ ]*\).*/\1/p')"

## docker-clean: remove the containers of harnesses that are no longer running (FORCE=1: of every harness)
docker-clean:
	@n=0; for id in $$(docker ps -aq --filter label=lockharness.pid $(if $(FORCE),,--filter label=lockharness.pidns=$$(readlink /proc/self/ns/pid))); do \
		pid=$$(docker inspect -f '{{index .Config.Labels "lockharness.pid"}}' $$id); \
		if [ -n "$(FORCE)" ] || [ ! -d /proc/$$pid ]; then docker rm -f $$id >/dev/null && n=$$((n+1)); fi; \
	done; echo "removed $$n harness containers"

## test: lint, the checker's mutants, every test (including real redis-server processes under faults, and the recorded runs in testdata/), then a short fuzz of decode → check → report
test: lint example mutants
	$(GO) run ./internal/testrun -shards $(or $(SHARDS),3)
	$(GO) test -run '^$$' -fuzz FuzzDecodeCheckReport -fuzztime $(or $(FUZZTIME),10s) -fuzzminimizetime 20x ./reports

## test-times: run every test as make test does and record the sharded packages' test times into testdata/test-times.tsv, which balances make test's shards
test-times:
	$(GO) run ./internal/testrun -shards $(or $(SHARDS),3) -record testdata/test-times.tsv

## example: build examples/customlock (a harness binary with a lock of its own, through the Go API) and run it for a clean, valid run
example:
	cd examples/customlock && $(GO) vet . && $(GO) build -o ../../bin/customlock-harness .
	@d=$$(mktemp -d); trap 'rm -rf $$d' EXIT; bin/customlock-harness run --lock ourlock --nemesis none --time-limit 4s --store $$d >/dev/null 2>&1 && echo "examples/customlock: ourlock valid"

## mutants: plant every kind of defect in every valid recorded run (testdata/runs) and hold the checker to naming each; equivalent changes must stay valid
mutants:
	@out=$$($(GO) test -count=1 -run '^TestMutants$$' -v ./internal/mutants 2>&1); code=$$?; \
	echo "$$out" | grep -v -E '^(=== RUN|--- (PASS|FAIL)|PASS$$|FAIL$$|ok |FAIL	)'; exit $$code

## fuzz: fuzz decode → check → report for longer (FUZZTIME, default 5m)
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecodeCheckReport -fuzztime $(or $(FUZZTIME),5m) -fuzzminimizetime 20x ./reports

## testdata: record one run of every catalog scenario into testdata/runs (the replay test holds the checker to them); NAMES=a,b records those rows only
testdata: build
	LOCKHARNESS_RECORD_TESTDATA=$(or $(NAMES),1) $(GO) test -count=1 -timeout 20m -run TestRecordTestdata -v ./runner

## test-short: the tests that need no Redis
test-short:
	$(GO) test -count=1 -short ./...

## lint: gofmt and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## bench: every speed figure in one table beside its goal: the pipeline against redis-benchmark, `harness check` on BENCH_OPS operations (default "1000000 10000000") under /usr/bin/time -v, each topology's time to its first operation, the failover repros' medians and explore's runs a minute (BENCH_EXPLORE per topology, default 60s; 0 skips it) and, with BENCH_SOAK=10m, the soak
bench: build
	BENCH_OPS="$(or $(BENCH_OPS),1000000 10000000)" BENCH_EXPLORE=$(or $(BENCH_EXPLORE),60s) BENCH_SOAK=$(or $(BENCH_SOAK),0) bench/all.sh

## bench-soak: one run of 10 clients under a mix of faults for SOAK (default 10m): the harness's own peak RSS, the history's size, and how long harness report takes to render it again
bench-soak: build
	bench/soak.sh $(or $(SOAK),10m)

## bench-check: the checker's Go benchmarks, then `harness check` on BENCH_OPS operations (default 1000000) under /usr/bin/time -v
bench-check: build
	$(GO) test -run '^$$' -bench . -benchmem ./checker
	bench/check.sh $(or $(BENCH_OPS),1000000)

## bench-ops: the harness's pipeline (hold 0, backoff 0, 4 clients) against redis-benchmark with the same commands and concurrency
bench-ops: build
	bench/ops.sh $(or $(SECONDS),10)

## regressions: run every catalog row docs/regressions.md lists for SEEDS seeds (default 5) and rewrite its last-reproduced column from what they did (ROWS=a,b narrows them); exits 1 if a row no longer reproduces
regressions: build
	$(GO) run ./cmd/regressions -seeds $(or $(SEEDS),5) $(if $(ROWS),-rows $(ROWS))

## bench-explore: guided search against random search, K seeds each (SEEDS, default 3) of every target with the same budget (BUDGET, default 5m); TARGETS narrows them
bench-explore: build
	$(GO) run ./cmd/explorebench -seeds $(or $(SEEDS),3) -budget $(or $(BUDGET),5m) $(if $(TARGETS),-targets $(TARGETS))

## repro-failover: reproduce the Sentinel failover double grant for ten seeds
repro-failover: build
	$(BIN) repro failover-double-grant --seeds 10

## repro NAME=...: reproduce any catalog scenario (SEEDS=N, default 5)
repro: build
	@test -n "$(NAME)" || (echo "usage: make repro NAME=<scenario> [SEEDS=N]"; exit 2)
	$(BIN) repro $(NAME) --seeds $(or $(SEEDS),5)

## suite: every catalog scenario once (seed 1); the matrix report goes to store/suites/
suite: build
	$(BIN) suite quick

## suite-full: every scenario for 5 seeds plus randomised runs
suite-full: build
	$(BIN) suite full

## report DIR=...: regenerate a run directory's results, plots and pages
report: build
	@test -n "$(DIR)" || (echo "usage: make report DIR=store/<name>/<timestamp>"; exit 2)
	$(BIN) report $(DIR)

## serve: browse the store on http://127.0.0.1:8080/
serve: build
	$(BIN) serve --store store --addr 127.0.0.1:8080

clean:
	rm -rf bin docker/rootfs docker/harness/rootfs
