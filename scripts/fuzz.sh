#!/usr/bin/env bash
# Runs every fuzz target in the module for a while each.
#   scripts/fuzz.sh [DURATION]     (default 10s per target, e.g. 1m)
# Seed corpora run as ordinary tests in `make test`; this explores further.
set -euo pipefail
cd "$(dirname "$0")/.."
time=${1:-10s}
status=0
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		echo "== $pkg $target ($time)"
		# A minimisation bounded by count: the minimiser's span removal is
		# quadratic in the input, so an input of a few KiB took the whole
		# limit (60 s by default, 10 s before), executions not counted: in
		# 40 s, 19 execs of wasm/guest FuzzShape with 10s, 477,697 with 500x.
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$time" -fuzzminimizetime 500x -parallel 1 "$pkg"; then
			status=1
		fi
	done
done
exit $status
