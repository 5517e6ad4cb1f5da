# cairn's build, test and demo targets. Only Go is needed; Python 3.9 or
# newer, when there, also tests the Python module (python/).
GO      ?= go
BIN     := bin/cairn
DEMO    := examples/quickstart
# The demo keeps its cache beside the example so it never touches ~/.cache.
DEMO_CACHE := $(CURDIR)/.demo-cache

.PHONY: build test test-python demo-python test-race test-long test-short demo demo-budget demo-clean lint fuzz bench-go bench bench-smoke clean

# A static binary (no cgo): it starts sooner than one linked against
# libc, which a no-op run notices. Group names of a shared cache are then
# looked up in /etc/group, then with getent(1).
# The version is git describe's, when this is a git checkout; else the
# binary reports the VCS stamp the Go toolchain adds (cairn version).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
build:
	CGO_ENABLED=0 $(GO) build -buildvcs=auto $(if $(VERSION),-ldflags "-X main.version=$(VERSION)") -o $(BIN) ./cmd/cairn

# Every package's tests, the CLI end to end (the testscript files of
# cmd/cairn) included, without the race detector: under 5 minutes on two
# cores.
test:
	$(GO) test -count=1 -timeout 20m ./...
	@if command -v $(PYTHON) >/dev/null 2>&1; then $(MAKE) --no-print-directory test-python; \
	else echo "make test: no $(PYTHON): the Python module's tests did not run"; fi

# The Python module's unittest tests, against the cairn just built.
PYTHON ?= python3
test-python: build
	CAIRN_BIN=$(CURDIR)/$(BIN) $(PYTHON) -m unittest discover -s python/tests

# The same tests under the race detector. Much slower: the CLI's tests run
# the race-instrumented test binary as cairn, hundreds of times.
test-race:
	$(GO) test -race -count=1 -timeout 45m ./...

# The long reliability tier: full counts (CAIRN_LONG=1) and every fuzz
# target for FUZZTIME; prints the figures of RELIABILITY.md.
test-long:
	GO=$(GO) FUZZTIME=$(FUZZTIME) sh scripts/test-long.sh

test-short:
	$(GO) test -short -count=1 ./...

# Run the bundled example; run it twice to see everything cached.
demo: build
	cd $(DEMO) && CAIRN_CACHE_DIR=$(DEMO_CACHE) $(CURDIR)/$(BIN) run

# The budget story: a phase stopped over budget, the run budget reached,
# both raised and resumed, with memoised calls never paid twice.
BUDGET_DEMO := examples/llm-budget
demo-budget: build
	rm -rf $(BUDGET_DEMO)/.cairn $(BUDGET_DEMO)/data $(BUDGET_DEMO)/out $(CURDIR)/.demo-budget-cache
	cd $(BUDGET_DEMO) && CAIRN_CACHE_DIR=$(CURDIR)/.demo-budget-cache sh demo.sh $(CURDIR)/$(BIN)

# A sweep of fake paid models in Python: @cairn.memo, params and budget;
# a budget stop, a rerun paying only the missing calls, a forced rerun
# paying nothing.
PY_DEMO := examples/python-llm
demo-python: build
	rm -rf $(PY_DEMO)/.cairn $(PY_DEMO)/data $(PY_DEMO)/out $(CURDIR)/.demo-python-cache
	cd $(PY_DEMO) && CAIRN_CACHE_DIR=$(CURDIR)/.demo-python-cache sh demo.sh $(CURDIR)/$(BIN)

demo-clean:
	rm -rf $(DEMO)/.cairn $(DEMO)/data $(DEMO)/out $(DEMO_CACHE)
	rm -rf $(BUDGET_DEMO)/.cairn $(BUDGET_DEMO)/data $(BUDGET_DEMO)/out $(CURDIR)/.demo-budget-cache
	rm -rf $(PY_DEMO)/.cairn $(PY_DEMO)/data $(PY_DEMO)/out $(CURDIR)/.demo-python-cache

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null ./cmd/cairn  # macOS laptops: the command builds there too

# Every fuzz target (each func Fuzz* of the module) for FUZZTIME, one after
# the other; prints a FIGURE T31 line per target and fails on a crasher.
FUZZTIME ?= 20s
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) sh scripts/fuzz.sh

# Go benchmarks for the hot paths (hashing, store, restore, keys, planning).
bench-go:
	$(GO) test -run='^$$' -bench=. -benchtime=3x ./cache ./dag ./engine ./inputs ./memories ./runrec ./spec ./internal/hclfmt

# cairn side by side with make, ninja, go-task, Turborepo and Snakemake
# (bench/README.md). Installs missing tools; QUICK=1 for a short run;
# BENCHFLAGS passes harness flags (e.g. -sizes S,M -tools cairn,ninja).
# The data workloads at their quick sizes, as a smoke test (CI): exit 1
# if a cairn run fails or writes other outputs, whatever the figures.
bench-smoke:
	$(GO) run ./bench/harness -quick -smoke -sizes F10k,O1k,G64m -tools cairn -scale=false -work $${TMPDIR:-/tmp}/cairn-bench-smoke -results $${TMPDIR:-/tmp}/cairn-bench-smoke-results

bench:
	$(GO) run ./bench/harness $(if $(filter 1 yes true,$(QUICK)),-quick) $(BENCHFLAGS)

clean: demo-clean
	rm -rf bin
