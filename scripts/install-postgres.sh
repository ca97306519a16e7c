#!/usr/bin/env bash
# Installs the PostgreSQL server binaries from Debian's packages when they are missing,
# for `--engine postgres` (crates/pgserver runs this script itself when it finds no
# server, and .ci/run calls it). Idempotent: prints one line and exits 0 when a server
# is already there. On failure prints one line to stderr and exits non-zero; apt's own
# output goes to a log file named in that line.
set -uo pipefail

# A server installation is a directory holding initdb, postgres and pg_isready.
find_bindir() {
    local dir candidates=()
    if command -v pg_config >/dev/null 2>&1; then
        candidates+=("$(pg_config --bindir 2>/dev/null)")
    fi
    # Newest version first (sort -V orders 9.6 < 15 < 16).
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
        candidates+=("$dir")
    done
    for dir in "${candidates[@]}"; do
        if [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ] && [ -x "$dir/pg_isready" ]; then
            echo "$dir"
            return 0
        fi
    done
    return 1
}

if bindir=$(find_bindir); then
    echo "postgresql: server binaries present in $bindir"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "postgresql: server binaries missing and apt-get unavailable: install PostgreSQL (initdb, postgres) or pass --pg-url" >&2
    exit 1
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "postgresql: server binaries missing, not root and no sudo: run 'apt-get install -y postgresql' as root or pass --pg-url" >&2
        exit 1
    fi
    # -n: fail instead of waiting for a password nobody will type.
    SUDO=(sudo -n)
fi

log=$(mktemp "${TMPDIR:-/tmp}/install-postgres.XXXXXX.log")
export DEBIAN_FRONTEND=noninteractive
if ! "${SUDO[@]}" apt-get update >"$log" 2>&1; then
    echo "postgresql: 'apt-get update' failed (see $log)" >&2
    exit 1
fi
if ! "${SUDO[@]}" apt-get install -y postgresql >>"$log" 2>&1; then
    echo "postgresql: 'apt-get install -y postgresql' failed (see $log)" >&2
    exit 1
fi
if ! bindir=$(find_bindir); then
    echo "postgresql: installed the package but found no initdb/postgres under /usr/lib/postgresql (see $log)" >&2
    exit 1
fi
rm -f "$log"
echo "postgresql: installed server binaries in $bindir"
