#!/usr/bin/env bash
# A long TPC-C run with --log async on a durable engine, killed with SIGKILL once a
# minute and reopened each time: how the log's disk use and the time to recover move as
# the run goes on (issue 43: they must follow the database's size, not the run's length).
#
#   scripts/log-growth.sh ENGINE [MINUTES] [RATE] [DIR]
#
# ENGINE: memory, mvcc, partitioned or disk. RATE: offered TPC-C transactions per second
# (--rate; pick one whose growth fits in memory for MINUTES). Environment: OLTPSCOPE (the
# binary, default target/release/oltpscope), WAREHOUSES (default 2), EXTRA (more `run`
# options, e.g. "--checkpoint-log 1TB" for the same run without checkpoints), LOCK (a
# file to flock around each timed reopening, when other work shares the machine).
# Prints one CSV line per minute: the directory's files (apparent and allocated bytes),
# then the reopening run's "opened the database in" time (recovery included).
set -euo pipefail
engine=${1:?usage: scripts/log-growth.sh ENGINE [MINUTES] [RATE] [DIR]}
minutes=${2:-10}
rate=${3:-5000}
dir=${4:-/tmp/log-growth-$engine}
bin=${OLTPSCOPE:-target/release/oltpscope}
wh=${WAREHOUSES:-2}
extra=${EXTRA:-}
locked() { if [ -n "${LOCK:-}" ]; then flock "$LOCK" "$@"; else "$@"; fi; }
if [ -e "$dir" ]; then
  echo "error: $dir exists: give a new directory (this script does not remove anything)" >&2
  exit 2
fi
mkdir -p "$dir"
db=$dir/db
"$bin" load tpcc --engine "$engine" --db "$db" --warehouses "$wh" >"$dir/load.out" 2>&1
allocated() { du -sB1 "$1" | cut -f1; }
apparent() { du -sb --apparent-size "$1" | cut -f1; }
echo "minute,killed_run_txn,db_apparent_bytes,db_allocated_bytes,largest_file,largest_allocated_bytes,open_s,reopen_wall_s"
for m in $(seq 1 "$minutes"); do
  # shellcheck disable=SC2086
  "$bin" run tpcc --engine "$engine" --db "$db" --no-load --log async --warehouses "$wh" \
    --threads 2 --rate "$rate" --duration 100000 --warmup 0 --no-check \
    --acked-file "$dir/acked-$m" $extra >"$dir/run-$m.out" 2>&1 &
  pid=$!
  sleep 60
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  acked=$(wc -l <"$dir/acked-$m")
  big=$(ls -S "$db" | head -1)
  line="$m,$acked,$(apparent "$db"),$(allocated "$db"),$big,$(allocated "$db/$big")"
  # The reopening run: recovery, one transaction, a clean stop.
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  locked "$bin" run tpcc --engine "$engine" --db "$db" --no-load --log async --warehouses "$wh" \
    --threads 1 --txns 1 --warmup 0 --no-check $extra --json "$dir/open-$m.json" \
    >"$dir/open-$m.out" 2>&1
  wall=$(echo "$(date +%s.%N) - $t0" | bc)
  # (open_s: the report's own time to open the database; "-" from a binary before it.)
  open_s=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("open_s", "-"))' "$dir/open-$m.json")
  echo "$line,$open_s,$wall"
done
