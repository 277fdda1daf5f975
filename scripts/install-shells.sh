#!/usr/bin/env bash
# Installs the shells whose completion scripts cmd/sluice's tests drive
# (completion_shells_test.go): Debian's zsh and fish packages, when they are
# not on PATH. Installing needs root and apt-get (as in CI); otherwise the
# script says what to install and fails. Idempotent: with both shells
# present it does nothing. The package lists are updated only when they are
# older than an hour (install-browser.sh may just have updated them).
set -euo pipefail
missing=()
for sh in zsh fish; do
	command -v "$sh" >/dev/null 2>&1 || missing+=("$sh")
done
if [[ ${#missing[@]} == 0 ]]; then
	exit 0
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-shells: ${missing[*]} missing; install them (Debian: apt-get install ${missing[*]})" >&2
	exit 1
fi
echo "install-shells: installing ${missing[*]}" >&2
if [[ -z $(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -60 -print -quit 2>/dev/null) ]]; then
	apt-get update -qq >&2
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
for sh in "${missing[@]}"; do
	command -v "$sh" >/dev/null 2>&1 || { echo "install-shells: $sh did not install" >&2; exit 1; }
done
