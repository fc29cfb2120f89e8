# pgcache — `make run` builds and serves the embedded default (one memory
# route); `make test` installs the servers the tests need and runs them all.
GO      ?= go
BIN     := bin/pgcache
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/pgcache/pgcache/server.version=$(VERSION)
ARGS    ?=

# Debian packages the integration tests start for real: PostgreSQL (initdb,
# pg_ctl, pgbench) and Redis 7 standing in for Valkey, which bookworm lacks.
TEST_PACKAGES := postgresql redis-server redis-tools

.PHONY: all build run test test-deps lint fmt vet bench clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/pgcache

run: build
	./$(BIN) run $(ARGS)

## test: install what the tests need, check formatting and vet, run every test with -race.
test: test-deps lint
	$(GO) test -race -count=1 -timeout 15m ./...

test-deps:
	@missing=""; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v redis-server >/dev/null 2>&1 || command -v valkey-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v redis-cli >/dev/null 2>&1 || missing="$$missing redis-tools"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" != 0 ]; then SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

lint: fmt vet

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## bench: the Go benchmarks of the hot paths.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin
