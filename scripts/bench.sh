#!/usr/bin/env bash
set -euo pipefail
echo "bench: not wired yet" >&2
