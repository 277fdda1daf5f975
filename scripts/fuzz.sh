#!/usr/bin/env bash
set -euo pipefail
echo "fuzz: not wired yet" >&2
