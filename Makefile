# sluice — the two commands of the quick start are `make run` and `make test`.
GO      ?= go
BIN     := bin/sluice
PKGS    := ./...
export SLUICE_REPO_ROOT := $(CURDIR)

.PHONY: all build run test unit vet check peers browser shells interop conformance bench fuzz filters clean

all: build

# A static binary: without cgo no libc and dynamic loader are mapped, about
# 2 MiB less resident for an idle serve (BENCHMARKS.md); nothing uses cgo.
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/sluice

# The product's demo on a bundled default (see scripts/demo.sh).
run: build
	./scripts/demo.sh $(BIN)

# Everything CI runs: vet, the committed filter modules rebuilt from source
# (they must not drift), the race-enabled unit and interop tests against
# real peers, and the conformance suite (scripts/conformance.sh, against the
# built binary).
test: peers browser shells vet
	./scripts/build-filters.sh --check
	SLUICE_REQUIRE_PEERS=1 $(GO) test -race -count=1 -timeout 20m $(PKGS)
	./scripts/wine-test.sh
	./scripts/conformance.sh
	./scripts/conformance-client.sh

vet:
	$(GO) vet $(PKGS)

check: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) mod tidy -diff
	./scripts/build-filters.sh --check
	@# Cross-compile and vet everything (tests included) for every supported platform.
	@set -e; for p in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64; do \
		echo "check: build and vet for $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build ./...; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...; \
	done
	@# Other platforms build, vet and launch no local server (gateway/proc's doc.go).
	@set -e; for p in freebsd/amd64 solaris/amd64 illumos/amd64 aix/ppc64; do \
		echo "check: build and vet for $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build ./...; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...; \
	done

peers:
	./scripts/install-peers.sh

# Chromium for the dashboard's browser tests (Debian's package).
browser:
	./scripts/install-browser.sh

# zsh and fish for the completion tests (Debian's packages).
shells:
	./scripts/install-shells.sh

conformance: peers build
	./scripts/conformance.sh

bench: peers
	./scripts/bench.sh

fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

filters:
	./scripts/build-filters.sh

clean:
	rm -rf bin .cache
