#!/usr/bin/env bash
# Retention soak: feeds STATIONS gauges at 15-minute readings for DAYS days through `klaxon ingest`,
# `klaxon evaluate` and `klaxon prune` (RETENTION days of readings and transitions), a chunk of
# CHUNK days of simulated time at a time, with `--now` advancing. Reports the database file's size
# and each step's wall time as it goes; at the end, whether the file stopped growing once pruning
# caught up (size at the end vs. size one retention period in) and whether evaluation stayed flat
# (median per chunk in the last retention period vs. the first).
#
#   Benchmarks/retention-soak.sh                                   # 1,000 × 365 days, 90-day retention
#   STATIONS=100 DAYS=30 RETENTION=7 Benchmarks/retention-soak.sh  # small, for a debug build
#
# KLAXON picks the binary (default: .build-release/release/klaxon if built, else .build/debug/klaxon;
# `Benchmarks/run.sh` builds the release one). DIR keeps the data (default: a temporary folder,
# removed at the end). Needs python3 (to generate readings). Exit status: 0 when the file is bounded
# (end ≤ 1.25 × the size one retention period in) and evaluation is flat (last ≤ 1.5 × first), 1 if
# not, 2 on an error.
set -euo pipefail
cd "$(dirname "$0")/.."

STATIONS=${STATIONS:-1000}
DAYS=${DAYS:-365}
RETENTION=${RETENTION:-90}
CHUNK=${CHUNK:-1}
if [[ -z "${KLAXON:-}" ]]; then
    KLAXON=.build/debug/klaxon
    [[ -x .build-release/release/klaxon ]] && KLAXON=.build-release/release/klaxon
fi
KLAXON=$(realpath "$KLAXON")
[[ -x "$KLAXON" ]] || { echo "no klaxon binary at $KLAXON (swift build first)" >&2; exit 2; }
if [[ -n "${DIR:-}" ]]; then
    mkdir -p "$DIR"
    dir=$(realpath "$DIR")
else
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
fi
rm -f "$dir"/k.sqlite*

cat >"$dir/rules.yaml" <<'YAML'
rules:
  - name: high-water
    kind: threshold
    metric: gage_height
    above: 13
    clear: 12.5
    for: 30m
  - name: rising-fast
    kind: rate
    metric: gage_height
    rising: 1
    window: 1h
    clear: 0.3
YAML
cat >"$dir/klaxon.yaml" <<YAML
database: k.sqlite
rules: [rules.yaml]
retention:
  readings: ${RETENTION}d
  transitions: ${RETENTION}d
YAML

# One chunk of readings as CSV: every station every 15 minutes, a slow wave with a daily storm at some.
gen() {
    python3 - "$STATIONS" "$1" "$2" <<'PY'
import math, sys
stations, first, days = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
base = 1735689600  # 2025-01-01T00:00:00Z
out = sys.stdout
out.write("station,metric,time,value,unit\n")
for step in range(first * 96, (first + days) * 96):
    t = base + step * 900
    iso = __import__("time").strftime("%Y-%m-%dT%H:%M:%SZ", __import__("time").gmtime(t))
    d = step / 96.0
    for s in range(stations):
        v = 8 + 3 * math.sin(d * 0.7 + s) + (5 if (int(d) + s) % 17 == 0 and 40 <= step % 96 <= 60 else 0)
        out.write(f"G{s:05d},gage_height,{iso},{v:.2f},ft\n")
PY
}

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
size() { local n=0; for f in "$dir"/k.sqlite "$dir"/k.sqlite-wal; do [[ -f $f ]] && n=$((n + $(stat -c %s "$f"))); done; echo $n; }

echo "retention soak: $STATIONS stations × $DAYS days at 15 min ($((STATIONS * DAYS * 96)) readings), ${RETENTION}-day retention, ${CHUNK}-day chunks"
echo "binary: $KLAXON"
printf '%6s %12s %12s %12s %10s %10s %10s\n' day readings "db MiB" "ingest ms" "eval ms" "prune ms" removed
evals=()
size_at_retention=0
report_every=$(( DAYS / CHUNK / 15 )); (( report_every < 1 )) && report_every=1
chunk=0
for ((day = 0; day < DAYS; day += CHUNK)); do
    n=$(( day + CHUNK > DAYS ? DAYS - day : CHUNK ))
    gen "$day" "$n" >"$dir/chunk.csv"
    end=$(python3 -c "import time,sys; print(time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(1735689600 + $(( (day + n) * 86400 )))))")
    t0=$(date +%s%N)
    "$KLAXON" ingest --db "$dir/k.sqlite" "$dir/chunk.csv" >/dev/null 2>&1
    ingest_ms=$(ms "$t0")
    t0=$(date +%s%N)
    "$KLAXON" evaluate --config "$dir/klaxon.yaml" --now "$end" >/dev/null 2>&1
    eval_ms=$(ms "$t0")
    evals+=("$eval_ms")
    t0=$(date +%s%N)
    removed=$("$KLAXON" prune --config "$dir/klaxon.yaml" --now "$end" 2>/dev/null | sed -n 's/^readings: removed \([0-9]*\).*/\1/p')
    prune_ms=$(ms "$t0")
    bytes=$(size)
    (( day + n <= RETENTION + CHUNK )) && size_at_retention=$bytes
    chunk=$((chunk + 1))
    if (( chunk % report_every == 0 || day + n >= DAYS )); then
        count=$(sqlite3 "$dir/k.sqlite" "SELECT count(*) FROM readings")
        printf '%6d %12d %12.1f %12d %10d %10d %10s\n' $((day + n)) "$count" "$(echo "$bytes / 1048576" | bc -l)" \
            "$ingest_ms" "$eval_ms" "$prune_ms" "${removed:-0}"
    fi
done

python3 - "$size_at_retention" "$(size)" "$RETENTION" "$CHUNK" "${evals[@]}" <<'PY'
import statistics, sys
at_retention, at_end, retention, chunk = map(int, sys.argv[1:5])
evals = list(map(int, sys.argv[5:]))
window = max(1, retention // chunk)
first = statistics.median(evals[:window])
last = statistics.median(evals[-window:])
grow = at_end / at_retention if at_retention else float("inf")
flat = last / first if first else float("inf")
print(f"database file: {at_retention / 1048576:.1f} MiB one retention period in, {at_end / 1048576:.1f} MiB at the end ({grow:.2f}×)")
print(f"evaluation per chunk: median {first} ms in the first {window} chunks, {last} ms in the last {window} ({flat:.2f}×)")
ok = grow <= 1.25 and flat <= 1.5
print("bounded and flat" if ok else "NOT bounded or NOT flat")
sys.exit(0 if ok else 1)
PY
