#!/usr/bin/env bash
# Refreshes the dashboard's vendored chart library from the npm package
# pinned by gateway/admin/assets/vendor/package-lock.json. Run it by hand
# after changing the pin; the build never runs it (the copied files are
# committed and embedded with go:embed).
set -euo pipefail
cd "$(dirname "$0")/.."
vendor=$PWD/gateway/admin/assets/vendor
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$vendor/package.json" "$vendor/package-lock.json" "$tmp/"
(cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error)
cp "$tmp/node_modules/uplot/dist/uPlot.iife.min.js" "$tmp/node_modules/uplot/dist/uPlot.min.css" "$vendor/"
cp "$tmp/node_modules/uplot/LICENSE" "$vendor/uPlot.LICENSE"
echo "vendor-dashboard: uPlot $(node -p "require('$tmp/node_modules/uplot/package.json').version" 2>/dev/null || echo '(version unknown)') copied to $vendor" >&2
