#!/usr/bin/env bash
# Install headless Chromium (Debian's `chromium` package) for the browser tests
# (tests/test_export_browser.py, pytest -m browser). Idempotent: does nothing when a
# Chromium binary is already on PATH. Needs root (or sudo) and apt.
set -euo pipefail

for bin in "${CLIO_CHROMIUM:-}" chromium chromium-browser; do
    if [ -n "$bin" ] && command -v "$bin" >/dev/null 2>&1; then
        echo "chromium already installed: $(command -v "$bin")"
        exit 0
    fi
done

if ! command -v apt-get >/dev/null 2>&1; then
    echo "apt-get not found: install Chromium with your package manager, or set CLIO_CHROMIUM" >&2
    exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "need root (or sudo) to apt-get install chromium" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
# fonts: readable screenshots without pulling in every recommended package
$SUDO apt-get install -y --no-install-recommends chromium fonts-dejavu-core fonts-liberation
command -v chromium
