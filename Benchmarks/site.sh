#!/usr/bin/env bash
# Status site (issue 16): `/gauges/ID?since=…` over a year of 15-minute readings (stage, discharge
# and precipitation: 105,120 readings) with NWS flood categories, from `klaxon run`'s listener.
# Reports the median wall time of RUNS requests (curl's time_total: the store reads, the
# down-sampling, the SVG and HTML, and the loopback) and the page's size.
# Targets: ≤ 50 ms and ≤ 150 KB.
#
#   Benchmarks/site.sh                      # builds the release klaxon, then runs
#   KLAXON=/path/to/klaxon Benchmarks/site.sh
#
# Exit status: 0 both targets met, 1 not, 2 a setup error.
set -euo pipefail
[[ -n "${KLAXON:-}" && "$KLAXON" != /* && -e "$KLAXON" ]] && KLAXON="$PWD/$KLAXON"
cd "$(dirname "$0")/.."
runs=${RUNS:-20}
target_ms=${TARGET_MS:-50}
target_kb=${TARGET_KB:-150}
python=${PYTHON:-/usr/bin/python3}
say() { echo "site.sh: $*" >&2; }
fail() { say "$*"; exit 2; }

if [[ -z "${KLAXON:-}" ]]; then
    swift build -c release --static-swift-stdlib --scratch-path .build-release --product klaxon >&2 || fail "the release build failed"
    KLAXON=$PWD/.build-release/release/klaxon
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/klaxon-site.XXXXXX")
pids=()
cleanup() {
    local status=$?
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; done
    [[ "${KEEP:-0}" == 1 ]] && say "kept $work" || rm -rf "$work"
    exit $status
}
trap cleanup EXIT

# A year of 15-minute readings ending now: a wandering stage with a few one-reading spikes.
"$python" - "$work/year.csv" <<'PY'
import math, sys, time
path = sys.argv[1]
end = int(time.time()) // 900 * 900
n = 365 * 96
with open(path, "w") as f:
    f.write("station,metric,time,value,unit\n")
    for k in range(n):
        t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end - (n - 1 - k) * 900))
        stage = 10 + 5 * math.sin(k / 300) + 2 * math.sin(k / 37) + (9 if k % 5000 == 0 else 0)
        f.write(f"B1,gage_height,{t},{stage:.2f},ft\nB1,discharge,{t},{stage * 900:.0f},ft3/s\n")
        f.write(f"B1,precipitation,{t},{0.01 if k % 7 == 0 else 0},in\n")
PY
"$KLAXON" ingest --db "$work/klaxon.sqlite" "$work/year.csv" >&2
sqlite3 "$work/klaxon.sqlite" "INSERT INTO gauges (lid, usgs_id, info, fetched_at) VALUES ('BENCH1', 'B1',
  '{\"lid\":\"BENCH1\",\"usgsID\":\"B1\",\"name\":\"Bench River at Test\",\"categories\":{\"stage\":{\"action\":15,\"minor\":18,\"moderate\":23,\"major\":28},\"flow\":{},\"stageUnit\":\"ft\",\"flowUnit\":\"cfs\"}}',
  strftime('%s','now'))"

mkdir -p "$work/rules"
cat >"$work/rules/major.yaml" <<'YAML'
name: major
kind: threshold
metric: gage_height
above: 28
severity: critical
YAML
cat >"$work/klaxon.yaml" <<YAML
database: $work/klaxon.sqlite
rules: [$work/rules]
listen: 127.0.0.1:0
retention: {readings: forever}  # the default 90 days would prune most of the year
YAML
"$KLAXON" run --config "$work/klaxon.yaml" >"$work/daemon.out" 2>"$work/daemon.log" &
pids+=($!)
for _ in $(seq 200); do grep -q 'msg=listening address=' "$work/daemon.log" && break; sleep 0.05; done
grep -q 'msg=listening address=' "$work/daemon.log" || fail "the daemon did not start: $(tail -5 "$work/daemon.log")"
port=$(sed -n 's/.*msg=listening address=.*:\([0-9]*\)$/\1/p' "$work/daemon.log" | head -1)
# Settled: the daemon has evaluated the year (its first pass), so the requests do not share the
# cores with it.
settled=
for _ in $(seq 600); do
    left=$(sqlite3 "$work/klaxon.sqlite" \
        "SELECT (SELECT coalesce(max(seq),0) FROM ingest_log) -
                (SELECT coalesce(max(CAST(value AS INTEGER)),0) FROM meta WHERE key = 'evaluated_log_seq')" 2>/dev/null || echo 1)
    [[ "$left" == 0 ]] && { settled=1; break; }
    sleep 0.2
done
[[ -n "$settled" ]] || fail "the daemon did not evaluate the year within 2 minutes"
since=$(date -u -d "@$(($(date +%s) - 365 * 86400))" +%F)
url="http://127.0.0.1:$port/gauges/B1?since=$since&refresh=off"
curl -sf -o "$work/page.html" "$url" || fail "GET $url failed"
grep -q 'band band-major' "$work/page.html" || fail "the page has no flood bands"
stored=$(sqlite3 "$work/klaxon.sqlite" "SELECT count(*) FROM readings")
[[ "$stored" == 105120 ]] || fail "$stored readings stored, not 105,120"
for _ in $(seq "$runs"); do curl -s -o /dev/null -w '%{time_total}\n' "$url"; done | sort -n >"$work/times"
median=$(awk '{ t[NR] = $1 } END { printf "%.1f", (NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2) * 1000 }' "$work/times")
size=$(wc -c <"$work/page.html")
kb=$(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1000 }')
echo "| status site | /gauges/ID over a year of 15-minute stage, discharge and rain (105,120 readings), median of $runs | $median ms, $kb KB | ≤ $target_ms ms, ≤ $target_kb KB |"
awk -v m="$median" -v t="$target_ms" -v s="$size" -v k="$target_kb" 'BEGIN { exit !(m <= t && s <= k * 1000) }'
