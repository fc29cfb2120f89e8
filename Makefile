# pgcache — `make run` builds and serves the embedded default (one memory
# route); `make demo` serves throwaway PostgreSQL and Valkey/Redis with
# sample data; `make test` installs the servers the tests need and runs
# them all.
GO      ?= go
BIN     := bin/pgcache
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/pgcache/pgcache/server.version=$(VERSION)
ARGS    ?=

# Debian packages, each as the program that shows it is installed and the
# package that provides it (a,b: either program will do). The tests start
# PostgreSQL (initdb, pg_ctl, pgbench, psql) and Redis 7 standing in for
# Valkey, which bookworm lacks, run the demo's cheat sheet (redis-cli, curl)
# and render report.html in headless Chromium; `make demo` needs the first
# four.
DEMO_PACKAGES := initdb:postgresql redis-server,valkey-server:redis-server redis-cli:redis-tools curl:curl
TEST_PACKAGES := $(DEMO_PACKAGES) systemd-analyze:systemd chromium:chromium

# apt-install installs the packages of $(1) whose program is missing;
# PostgreSQL's programs are looked for under /usr/lib/postgresql too.
define apt-install
	@missing=""; \
	for pair in $(1); do \
		found=""; \
		for prog in $$(echo "$${pair%%:*}" | tr ',' ' '); do \
			if command -v "$$prog" >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/"$$prog" >/dev/null 2>&1; then found=1; fi; \
		done; \
		[ -n "$$found" ] || missing="$$missing $${pair#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" != 0 ]; then SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

.PHONY: all build run demo demo-packages test test-faults test-deps test-packages redis-suite pgext-install lint fmt vet bench clean quick medium long gen-targets proto-gen

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/pgcache

run: build
	./$(BIN) run $(ARGS)

## demo: a throwaway PostgreSQL and Valkey/Redis with sample data, pgcache
## serving a route of every kind in front of them on :6379/:8080/:2019 (a
## free port for one that is taken), and a cheat sheet of commands to try;
## Ctrl-C stops everything and removes its files. ARGS as for run.
demo: build demo-packages
	./$(BIN) demo $(ARGS)

## test: install what the tests need, check formatting and vet, verify the
## systemd units, run every test with -race (but the fault suite's: test-faults).
test: test-deps lint verify-units
	$(GO) test -race -count=1 -timeout 15m $$($(GO) list ./... | grep -v '/faults$$')

## test-faults: the fault suite (faults/: PostgreSQL and Valkey restarted,
## crashed and cut off, 10,000 and slowloris clients, the binary signalled;
## docs/reliability.md) without -race, which would make its 10,000
## connections minutes long (`go test -race ./faults/` runs it smaller), and
## with -trimpath, as `make build` compiles, to share its compiled packages;
## then FUZZTIME of fuzzing for each parser (PGCACHE_FAULTS_FILL_NOTIFY_QUEUE=1
## adds the 8GB NOTIFY queue case). FUZZTIME counts inputs, not seconds: with
## a duration, Go 1.26's fuzz coordinator can report its own deadline as a
## failure when a worker is slow to stop (golang/go#75804, fixed in 1.27);
## it failed FuzzCRUDKey so once here, with no input to blame. 20,000 inputs
## take 4-15 s a parser on the 2-core machine.
FUZZTIME ?= 20000x
FUZZ     := proxy:FuzzReader backends/postgres:FuzzCRUDKey conf:FuzzConfig httpapi:FuzzHTTP internal/glob:FuzzMatch

test-faults: test-deps
	$(GO) test -trimpath -count=1 -timeout 10m ./faults/
	@set -e; for f in $(FUZZ); do \
		echo "fuzz $${f#*:} (./$${f%%:*}/, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${f#*:}$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 100x ./$${f%%:*}/; \
	done

test-deps: test-packages
	@$(MAKE) -s pgext-install
	@compat/frameworks/install.sh
	@compat/redissuite/install.sh >/dev/null

## redis-suite: Redis's own Tcl tests of issues 17, 18 and 28's units (compat/redissuite,
## the suite from Debian's redis source package) against pgcache, every test
## listed; REDIS_SUITE_TARGET=redis runs them against the baseline instead,
## redis-server limited by ACL to pgcache's commands, and =compare both, listing
## what the baseline passes and pgcache does not;
## REDIS_SUITE_UNITS='unit/multi unit/scan' runs only those units;
## REDIS_SUITE_ROUTE=postgres runs pgcache with every key on a PostgreSQL kv
## table behind an L1 (default: the memory route; `make test` runs the
## collection and pub/sub units on both).
REDIS_SUITE_TARGET ?= pgcache
REDIS_SUITE_UNITS  ?=
REDIS_SUITE_ROUTE  ?=

redis-suite: test-deps
	PGCACHE_REDIS_SUITE_TARGET='$(REDIS_SUITE_TARGET)' PGCACHE_REDIS_SUITE_UNITS='$(REDIS_SUITE_UNITS)' \
		PGCACHE_REDIS_SUITE_ROUTE='$(REDIS_SUITE_ROUTE)' \
		$(GO) test -count=1 -v -timeout 300m -run '^TestRedisSuite' ./compat/redissuite/

test-packages:
	$(call apt-install,$(TEST_PACKAGES))

demo-packages:
	$(call apt-install,$(DEMO_PACKAGES))

# pgext-install: the C fence trigger (pgext/, the pgcache_fence extension)
# built against the newest PostgreSQL under /usr/lib/postgresql and
# installed into it (its headers: postgresql-server-dev-<major>). On a
# database server, run it there; pgcache attach then uses it.
PG_MAJOR = $(shell ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1)
pgext-install:
	@test -n "$(PG_MAJOR)" || { echo "pgext-install: no PostgreSQL under /usr/lib/postgresql: apt-get install postgresql"; exit 1; }
	@if [ ! -f /usr/include/postgresql/$(PG_MAJOR)/server/postgres.h ]; then \
		echo "installing: postgresql-server-dev-$(PG_MAJOR)"; \
		if [ "$$(id -u)" != 0 ]; then SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends postgresql-server-dev-$(PG_MAJOR); \
	fi
	@if [ "$$(id -u)" != 0 ]; then SUDO=sudo; fi; \
	$(MAKE) -s -C pgext PG_CONFIG=/usr/lib/postgresql/$(PG_MAJOR)/bin/pg_config && \
	$$SUDO $(MAKE) -s -C pgext PG_CONFIG=/usr/lib/postgresql/$(PG_MAJOR)/bin/pg_config install >/dev/null && \
	$(MAKE) -s -C pgext PG_CONFIG=/usr/lib/postgresql/$(PG_MAJOR)/bin/pg_config clean

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

## install: the binary, the systemd unit, the pgcache user and an example
## config (kept if present). PREFIX, SYSCONFDIR, UNITDIR and DESTDIR as usual.
## tune-os: print, then apply, the sysctl settings and the PostgreSQL and
## Valkey/Redis cgroup caps of the published engine comparison (docs/bench.md;
## DRY_RUN=1 only prints).
## verify-units: systemd-analyze verify and security on systemd/ (make test runs it).
PREFIX     ?= /usr/local
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system
DESTDIR    ?=
DRY_RUN    ?=

.PHONY: install tune-os verify-units

install: build
	PREFIX='$(PREFIX)' SYSCONFDIR='$(SYSCONFDIR)' UNITDIR='$(UNITDIR)' DESTDIR='$(DESTDIR)' systemd/install.sh $(BIN)

tune-os:
	DESTDIR='$(DESTDIR)' DRY_RUN='$(DRY_RUN)' systemd/tune-os.sh

verify-units: build
	systemd/verify.sh $(BIN)

## quick, medium, long: `pgcache bench`, the engine comparison of "PostgreSQL as
## a High-Performance Cache" (docs/bench.md):
## 5 s / 300 s / 600 s of GET per engine on throwaway PostgreSQL and Redis
## (BENCH_ARGS adds flags, e.g. BENCH_ARGS='--engines memory,valkey --proto both').
BENCH_ARGS ?=

quick medium long: build test-deps
	./$(BIN) bench $@ $(BENCH_ARGS)

## gen-targets: new bench keys in gen/keys.txt (uuidv7, ulid and tsid columns).
gen-targets: build
	./$(BIN) bench gen-targets $(BENCH_ARGS)

## proto-gen: regenerate bench/proto/benchpb from bench/proto/userdata.proto
## with protoc (Debian's protobuf-compiler) and pinned Go plugins.
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_VTPROTO_VERSION := v0.6.0
TOOLS                      := $(CURDIR)/bin/tools

proto-gen:
	@command -v protoc >/dev/null 2>&1 || { \
		if [ "$$(id -u)" != 0 ]; then SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends protobuf-compiler; }
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(TOOLS) $(GO) install github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto@$(PROTOC_GEN_VTPROTO_VERSION)
	cd bench/proto && PATH="$(TOOLS):$$PATH" protoc -I . \
		--go_out=benchpb --go_opt=paths=source_relative \
		--go-vtproto_out=benchpb \
		--go-vtproto_opt=paths=source_relative,features=marshal+unmarshal+size+equal+pool,pool=github.com/pgcache/pgcache/bench/proto/benchpb.UserData \
		userdata.proto
