#!/usr/bin/env bash
# Make sure a PostgreSQL server is installed, for the store tests' throwaway cluster.
#
# Idempotent: when an `initdb` is found (Debian's /usr/lib/postgresql/*/bin, or on PATH) it only
# says where. Otherwise it installs Debian's `postgresql` package with apt-get (with sudo when
# not root). It never starts a server: the tests start their own, on a private unix socket.
set -euo pipefail
shopt -s nullglob

say() { echo "ensure-postgres: $*"; }

found=(/usr/lib/postgresql/*/bin/initdb)
if ((${#found[@]})); then
    say "PostgreSQL is installed (${found[*]})."
    exit 0
fi
if command -v initdb >/dev/null 2>&1; then
    say "PostgreSQL is installed ($(command -v initdb))."
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    say "no PostgreSQL server found and no apt-get to install one." >&2
    say "Install the PostgreSQL server (initdb, pg_ctl, postgres) and put its bin folder on PATH." >&2
    exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        say "installing PostgreSQL needs root: run 'apt-get install -y postgresql' as root." >&2
        exit 1
    fi
    sudo=(sudo)
fi

say "no PostgreSQL server found; installing Debian's 'postgresql' package with apt-get."
"${sudo[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y postgresql

found=(/usr/lib/postgresql/*/bin/initdb)
if ! ((${#found[@]})); then
    say "apt-get finished but no initdb is under /usr/lib/postgresql/*/bin." >&2
    exit 1
fi
say "installed PostgreSQL (${found[*]})."
