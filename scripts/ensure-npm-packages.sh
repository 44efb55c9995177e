#!/usr/bin/env bash
# Make sure the npm packages the tests use are installed: the reference MCP servers (for the
# connection tests: tests/connections, tests/server/test_server_connections.py) and axe-core
# (the accessibility checks of the web UI: tests/web/test_web_accessibility.py).
#
# Idempotent: when .npm-packages/node_modules holds them all it only says so. Otherwise it
# installs them with npm into .npm-packages at the repository's root (ignored by git). The
# tests use them from there (through tests/npm_packages.py), offline; nothing is fetched at
# test time.
set -euo pipefail

say() { echo "ensure-npm-packages: $*"; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="$ROOT/.npm-packages"
MODULES="$PREFIX/node_modules"
PACKAGES=(@modelcontextprotocol/server-everything @modelcontextprotocol/server-memory axe-core@4)
# What the tests run or read, one file for each package above.
NEEDED=(
    "$MODULES/.bin/mcp-server-everything"
    "$MODULES/.bin/mcp-server-memory"
    "$MODULES/axe-core/axe.min.js"
)

missing() {
    for file in "${NEEDED[@]}"; do
        [ -e "$file" ] || { echo "$file"; return 0; }
    done
    return 1
}

if ! missing >/dev/null; then
    say "the npm packages are installed ($MODULES)."
    exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
    say "npm is not installed; install Node.js 20 or later (with npm), then run this again." >&2
    exit 1
fi

say "installing ${PACKAGES[*]} into $PREFIX with npm."
mkdir -p "$PREFIX"
npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "${PACKAGES[@]}"

if file="$(missing)"; then
    say "npm finished but $file is not there." >&2
    exit 1
fi
say "installed the npm packages ($MODULES)."
