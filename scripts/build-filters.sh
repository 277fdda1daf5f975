#!/usr/bin/env bash
# Builds the built-in WebAssembly filters (wasm/filters/<name>/main.go, Go
# wasip1 reactors) into wasm/filters/<name>/<name>.wasm, which the host embeds,
# and records their sha256 in wasm/filters/SHA256SUMS.
#
#   scripts/build-filters.sh          rebuild and overwrite the committed .wasm
#   scripts/build-filters.sh --check  rebuild into a temp dir and fail if any
#                                     committed .wasm differs (same Go version
#                                     as recorded in SHA256SUMS required)
#
# Builds are reproducible: -trimpath, -ldflags "-s -w -buildid=", no cgo, no
# VCS stamping, so the same Go version yields the same bytes.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

filters=()
for d in wasm/filters/*/; do
  [ -f "$d/main.go" ] && filters+=("$(basename "$d")")
done

out="$root/wasm/filters"
if [ "$check" = 1 ]; then
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi

gover="$(go env GOVERSION)"
build() {
  local name="$1" dst="$2"
  GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS=-mod=readonly \
    go build -buildmode=c-shared -trimpath -buildvcs=false \
      -ldflags "-s -w -buildid=" -o "$dst" "./wasm/filters/$name"
}

status=0
sums=""
for name in "${filters[@]}"; do
  if [ "$check" = 1 ]; then
    dst="$out/$name.wasm"
  else
    dst="$out/$name/$name.wasm"
  fi
  build "$name" "$dst"
  sum="$(sha256sum "$dst" | cut -d' ' -f1)"
  sums+="$sum  $name/$name.wasm"$'\n'
  if [ "$check" = 1 ]; then
    committed="wasm/filters/$name/$name.wasm"
    have="$(sha256sum "$committed" 2>/dev/null | cut -d' ' -f1 || true)"
    if [ "$have" != "$sum" ]; then
      echo "build-filters: $committed is stale (committed ${have:-missing}, rebuilt $sum with $gover); run make filters" >&2
      status=1
    else
      echo "build-filters: $committed ok ($sum)"
    fi
  else
    echo "build-filters: $dst $(stat -c %s "$dst") bytes sha256 $sum"
  fi
done

if [ "$check" = 0 ]; then
  { echo "# built by scripts/build-filters.sh with $gover GOOS=wasip1 GOARCH=wasm"; printf '%s' "$sums"; } > wasm/filters/SHA256SUMS
else
  recorded="$(head -1 wasm/filters/SHA256SUMS 2>/dev/null | sed -n 's/.* with \(go[^ ]*\) .*/\1/p')"
  if [ "$status" != 0 ] && [ -n "$recorded" ] && [ "$recorded" != "$gover" ]; then
    echo "build-filters: note: the committed modules were built with $recorded, this is $gover" >&2
  fi
fi
exit "$status"
