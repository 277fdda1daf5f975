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
		# A short minimisation: with inputs of a few KiB the default (60 s per
		# new input) can take a whole run, with few executions counted.
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$time" -fuzzminimizetime 10s -parallel 1 "$pkg"; then
			status=1
		fi
	done
done
exit $status
