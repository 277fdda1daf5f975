#!/usr/bin/env bash
# Runs every benchmark in the module once and prints the results. Each
# benchmark reports its ratio against a baseline measured in the same run
# (metrics named x-*, or *-ratio); timings alone are never the claim.
#   scripts/bench.sh [go test -bench regexp] (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
pattern=${1:-.}
mkdir -p .cache
out=.cache/bench.txt
{
	echo "# sluice benchmarks"
	echo "# date: $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "# go: $(go version)"
} | tee "$out"
go test -run '^$' -bench "$pattern" -benchmem -count 1 -timeout 30m ./... 2>&1 | grep -v '^ok\|^PASS\|no test files' | tee -a "$out"
echo "results in $out" >&2
