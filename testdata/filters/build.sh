#!/usr/bin/env bash
# Rebuilds the committed .wasm test guests from their .wat sources with
# wat2wasm (Debian/Ubuntu: apt-get install wabt). Tests use the committed
# .wasm, so wabt is needed only to change a guest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
for w in *.wat; do
  wat2wasm --enable-all -o "${w%.wat}.wasm" "$w"
done
sha256sum *.wasm > SHA256SUMS
