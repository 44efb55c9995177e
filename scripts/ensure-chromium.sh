#!/usr/bin/env bash
# Make sure Debian's Chromium is installed, for the browser tests (tests/web).
#
# Idempotent: when /usr/bin/chromium exists it only says so. Otherwise it installs Debian's
# `chromium` package with apt-get (with sudo when not root). Playwright launches this browser
# with `executable_path`; nothing ever runs `playwright install` or downloads a browser build.
set -euo pipefail

say() { echo "ensure-chromium: $*"; }

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
    say "Chromium is installed ($CHROMIUM)."
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    say "no $CHROMIUM and no apt-get to install it." >&2
    say "Install Chromium so that $CHROMIUM runs it." >&2
    exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        say "installing Chromium needs root: run 'apt-get install -y chromium' as root." >&2
        exit 1
    fi
    sudo=(sudo)
fi

say "no $CHROMIUM; installing Debian's 'chromium' package with apt-get."
"${sudo[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y chromium

if [ ! -x "$CHROMIUM" ]; then
    say "apt-get finished but $CHROMIUM is not there." >&2
    exit 1
fi
say "installed Chromium ($CHROMIUM)."
