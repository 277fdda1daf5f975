#!/usr/bin/env bash
# The product demo behind `make run`: in a throwaway home it declares the
# bundled demo server, records its catalog, searches it without launching,
# runs a code-mode script whose value is shaped to the model's budget, pages
# the offloaded full result, and shows how to connect an agent.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-bin/sluice}
[[ -x $bin ]] || go build -o "$bin" ./cmd/sluice
server=bin/sluice-demo-server
go build -o "$server" ./gateway/mcp/mcptest/cmd/mcpfixture

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SLUICE_HOME=$tmp/config SLUICE_CACHE_DIR=$tmp/cache XDG_STATE_HOME=$tmp/state
mkdir -p "$SLUICE_HOME"
cat >"$SLUICE_HOME/mcp.yaml" <<YAML
servers:
  demo:
    command: $PWD/$server
    args: [-name, demo, -tools, "20"]
YAML

step() { printf '\n== %s\n$ sluice %s\n' "$1" "${*:3}"; "${@:2}"; }

step "1. The declared server (a throwaway SLUICE_HOME)" "$bin" servers
step "2. Launch it once and record its tool catalog" "$bin" find --server demo --refresh --limit 5
step "3. Search the recorded catalog: nothing is launched" "$bin" find "number" --limit 3
step "4. Describe a tool: schema, admission and code-mode signature" "$bin" describe demo__add
printf '\n== 5. Run a code-mode script\n$ sluice run testdata/demo/demo.star\n'
"$bin" run testdata/demo/demo.star 2>&1 | tee "$tmp/run.out" # one stream, so the lines keep their order
handle=$(grep -oE 'stored under handle [A-Za-z0-9_.-]+' "$tmp/run.out" | head -1 | sed -E 's/^stored under handle //')
if [[ -z $handle ]]; then
	echo "demo: the script's value was not shaped (no result handle found)" >&2
	exit 1
fi
step "6. The model pages the full result by its handle" "$bin" result "$handle" --offset 0 --length 600
cat <<EOF


== 7. Connect an agent
sluice serves MCP on stdio (or streamable HTTP with --http 127.0.0.1:PORT). In an MCP
client's configuration:

  {"mcpServers": {"sluice": {"command": "$PWD/$bin", "args": ["serve"]}}}

Declare your own servers in ~/.config/sluice/mcp.yaml (see README.md). The agent sees
find, describe, call, execute and read_result, whatever the size of the catalog.
EOF
