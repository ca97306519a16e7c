#!/usr/bin/env bash
# Records the function symbols of the bundled SQLite in a built oltpscope binary, each
# with its original source file: the DWARF line of the symbol (nm -l) is a line of the
# amalgamation sqlite3.c, which the amalgamation's `Begin file X` markers map to X.
#   crates/components/tools/record_sqlite_symbols.sh target/<profile>/oltpscope \
#       ~/.cargo/registry/src/*/libsqlite3-sys-*/sqlite3/sqlite3.c \
#       > crates/components/tests/data/sqlite-symbols.txt
set -euo pipefail
bin=$1
amalgamation=$2
echo "# SQLite's function symbols in $(basename "$bin") with their source files"
echo "# (recorded by crates/components/tools/record_sqlite_symbols.sh from a build of $(date -u +%Y-%m-%d))"
grep -nE '^/\*+ (Begin file|Continuing where we left off in) ' "$amalgamation" \
    | sed -E 's/^([0-9]+):.*(Begin file|left off in) ([^ ]+).*/\1 \3/' > /tmp/sqlite-files.$$
nm --defined-only -l "$bin" 2>/dev/null \
    | awk '($2=="t"||$2=="T") && $4 ~ /sqlite3\.c:[0-9]+$/ {split($4,a,":"); print $3, a[2]}' \
    | awk 'NR==FNR {start[NR]=$1; file[NR]=$2; n=NR; next}
           {line=$2; f=""; for (i=1;i<=n;i++) if (start[i] <= line) f=file[i]; print $1, f}' \
        /tmp/sqlite-files.$$ - \
    | sed -E 's/^([^ .]+)\.[^ ]* /\1 /' | sort -u
rm -f /tmp/sqlite-files.$$
