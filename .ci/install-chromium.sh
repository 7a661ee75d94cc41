#!/usr/bin/env bash
# Install Debian's Chromium for the report's browser test (src/eval/report/report-browser.test.ts).
# Idempotent: does nothing when /usr/bin/chromium is already there. Exits non-zero on failure.
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [[ -x "$CHROMIUM" ]]; then
  echo "chromium already installed: $CHROMIUM"
  exit 0
fi

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-chromium: need root or sudo to run apt-get" >&2
    exit 1
  fi
  SUDO=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq chromium

if [[ ! -x "$CHROMIUM" ]]; then
  echo "install-chromium: apt-get finished but $CHROMIUM is missing" >&2
  exit 1
fi
echo "chromium installed: $CHROMIUM"
