#!/usr/bin/env bash
# Make sure the npm reference MCP servers are installed, for the connection tests
# (tests/connections, tests/server/test_server_connections.py).
#
# Idempotent: when .mcp-servers/node_modules/.bin holds both servers it only says so. Otherwise
# it installs them with npm into .mcp-servers at the repository's root (ignored by git). The
# tests start them from there, offline; nothing is fetched at test time.
set -euo pipefail

say() { echo "ensure-mcp-servers: $*"; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="$ROOT/.mcp-servers"
BIN="$PREFIX/node_modules/.bin"
PACKAGES=(@modelcontextprotocol/server-everything @modelcontextprotocol/server-memory)

if [ -x "$BIN/mcp-server-everything" ] && [ -x "$BIN/mcp-server-memory" ]; then
    say "the reference MCP servers are installed ($BIN)."
    exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
    say "npm is not installed; install Node.js 20 or later (with npm), then run this again." >&2
    exit 1
fi

say "installing ${PACKAGES[*]} into $PREFIX with npm."
mkdir -p "$PREFIX"
npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "${PACKAGES[@]}"

for server in mcp-server-everything mcp-server-memory; do
    if [ ! -x "$BIN/$server" ]; then
        say "npm finished but $BIN/$server is not there." >&2
        exit 1
    fi
done
say "installed the reference MCP servers ($BIN)."
