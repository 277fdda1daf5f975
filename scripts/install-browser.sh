#!/usr/bin/env bash
# Installs the browser the dashboard's tests drive (cmd/sluice's
# browser_test.go): Debian's chromium package, when no chromium is on PATH.
# Installing needs root and apt-get (as in CI); otherwise the script says
# what to install and fails. Idempotent: with chromium present it does
# nothing.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || [[ -n ${SLUICE_CHROMIUM:-} && -x ${SLUICE_CHROMIUM:-} ]]; then
	exit 0
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-browser: chromium is missing; install it (Debian: apt-get install chromium) or set SLUICE_CHROMIUM to a Chromium binary" >&2
	exit 1
fi
echo "install-browser: installing chromium" >&2
apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >&2
command -v chromium >/dev/null 2>&1 || { echo "install-browser: chromium did not install" >&2; exit 1; }
