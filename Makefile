# lockharness: `make setup` once, then `make test`.
GO    ?= go
BIN   := bin/harness
SUDO  := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
REDIS_PKGS := redis-server redis-sentinel redis-tools

.PHONY: setup deps build test test-short lint bench clean

## setup: install Redis from Debian's packages when missing, then build bin/harness
setup: deps build

deps:
	@if command -v redis-server >/dev/null && command -v redis-sentinel >/dev/null && command -v redis-cli >/dev/null; then \
		echo "redis: $$(redis-server --version | cut -d' ' -f3)"; \
	else \
		echo "installing $(REDIS_PKGS) from Debian's packages"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(REDIS_PKGS); \
	fi
	$(GO) mod download

## build: compile the harness into bin/harness
build:
	$(GO) build -o $(BIN) ./cmd/harness

## test: lint, then every test, including the ones that run real redis-server processes and faults
test: lint
	$(GO) test -count=1 -timeout 20m ./...

## test-short: the tests that need no Redis
test-short:
	$(GO) test -count=1 -short ./...

## lint: gofmt and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## bench: the checker's benchmarks
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./checker

clean:
	rm -rf bin
