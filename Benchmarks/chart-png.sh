#!/usr/bin/env bash
# Charts as PNG (issue 30): `GET /gauges/ID/chart.png?range=365d` over a year of 15-minute readings
# (stage, discharge and precipitation: 105,120 readings) with NWS flood categories, from `klaxon run`'s
# listener. Cold: each request misses the chart cache (a one-reading push to another station between
# requests moves the store's data version), so it reads the year, draws the SVG and renders it with
# librsvg; warm: the same request again, from memory. Reports the median and p95 of RUNS requests of
# each (curl's time_total, the loopback included) and the PNG's size; then, as a peer, Debian's
# `rsvg-convert` (librsvg2-bin) turning the same chart's SVG (cut from the gauge page) into a PNG at
# the same scale over white, process start included. Targets (cold): ≤ 100 ms and ≤ 200 KB.
#
#   Benchmarks/chart-png.sh                      # builds the release klaxon, then runs
#   KLAXON=/path/to/klaxon Benchmarks/chart-png.sh
#   RUNS=40 KEEP=1 Benchmarks/chart-png.sh       # more requests; keep the work directory (the PNG, the SVG)
#
# Exit status: 0 both targets met, 1 not, 2 a setup error.
set -euo pipefail
[[ -n "${KLAXON:-}" && "$KLAXON" != /* && -e "$KLAXON" ]] && KLAXON="$PWD/$KLAXON"
cd "$(dirname "$0")/.."
runs=${RUNS:-30}
target_ms=${TARGET_MS:-100}
target_kb=${TARGET_KB:-200}
python=${PYTHON:-/usr/bin/python3}
say() { echo "chart-png.sh: $*" >&2; }
fail() { say "$*"; exit 2; }
command -v sqlite3 >/dev/null || fail "needs sqlite3 (Debian: sqlite3)"

if [[ -z "${KLAXON:-}" ]]; then
    # librsvg and its C libraries are linked dynamically beside the static Swift runtime.
    swift build -c release --static-swift-stdlib --scratch-path .build-release --product klaxon >&2 || fail "the release build failed"
    KLAXON=$PWD/.build-release/release/klaxon
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/klaxon-chart-png.XXXXXX")
pids=()
cleanup() {
    local status=$?
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; done
    [[ "${KEEP:-0}" == 1 ]] && say "kept $work" || rm -rf "$work"
    exit $status
}
trap cleanup EXIT

# A year of 15-minute readings ending now: a wandering stage with a few one-reading spikes (as site.sh).
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
token=bench-token-0123456789abcdef0123456789
cat >"$work/klaxon.yaml" <<YAML
database: $work/klaxon.sqlite
rules: [$work/rules]
listen: 127.0.0.1:0
api: {token: $token}
retention: {readings: forever}  # the default 90 days would prune most of the year
YAML
"$KLAXON" run --config "$work/klaxon.yaml" >"$work/daemon.out" 2>"$work/daemon.log" &
pids+=($!)
for _ in $(seq 200); do grep -qs 'msg=listening address=' "$work/daemon.log" && break; sleep 0.05; done
grep -q 'msg=listening address=' "$work/daemon.log" || fail "the daemon did not start: $(tail -5 "$work/daemon.log")"
port=$(sed -n 's/.*msg=listening address=.*:\([0-9]*\)$/\1/p' "$work/daemon.log" | head -1)
# Settled: the daemon has evaluated what is stored (its first pass, then each push), so the requests
# do not share the cores with it.
settle() {
    for _ in $(seq 600); do
        left=$(sqlite3 "$work/klaxon.sqlite" \
            "SELECT (SELECT coalesce(max(seq),0) FROM ingest_log) -
                    (SELECT coalesce(max(CAST(value AS INTEGER)),0) FROM meta WHERE key = 'evaluated_log_seq')" 2>/dev/null || echo 1)
        [[ "$left" == 0 ]] && return 0
        sleep 0.1
    done
    fail "the daemon did not evaluate within a minute"
}
settle
stored=$(sqlite3 "$work/klaxon.sqlite" "SELECT count(*) FROM readings")
[[ "$stored" == 105120 ]] || fail "$stored readings stored, not 105,120"
url="http://127.0.0.1:$port/gauges/B1/chart.png?range=365d"
base="http://127.0.0.1:$port"

# One reading for another station: the data version moves, the next chart request misses.
n=0
push() {
    n=$((n + 1))
    printf 'station,metric,time,value\nOTHER,gage_height,%s,%d\n' "$(date -u +%FT%TZ)" "$n" |
        curl -sf -o /dev/null -H "Authorization: Bearer $token" -H 'Content-Type: text/csv' --data-binary @- \
            "$base/api/v1/readings" || fail "the push failed"
    settle
}

# The first picture of the process: it loads librsvg (dlopen) and the fonts. The daemon's resident
# memory before and after.
rss() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/${pids[0]}/status"; }
rss_before=$(rss)
first=$(curl -sf -o "$work/chart.png" -w '%{time_total}' "$url") || fail "GET $url failed"
first_ms=$(awk -v t="$first" 'BEGIN { printf "%.1f", t * 1000 }')
rss_after=$(rss)
head -c 8 "$work/chart.png" | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a' || fail "not a PNG"
: >"$work/cold"
: >"$work/warm"
for _ in $(seq "$runs"); do
    push
    curl -sf -o "$work/chart.png" -w '%{time_total}\n' "$url" >>"$work/cold"
    curl -sf -o /dev/null -w '%{time_total}\n' "$url" >>"$work/warm"
done
# Median and p95 (nearest rank) of a column of seconds, in ms.
stats() {
    sort -n "$1" | awk '{ t[NR] = $1 } END {
        m = (NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2)
        p = int(NR * 0.95); if (p < NR * 0.95) p++
        printf "%.1f %.1f\n", m * 1000, t[p] * 1000 }'
}
read -r cold_median cold_p95 < <(stats "$work/cold")
read -r warm_median warm_p95 < <(stats "$work/warm")
size=$(wc -c <"$work/chart.png")
kb=$(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1000 }')
dims=$("$python" -c 'import struct,sys; b=open(sys.argv[1],"rb").read(24); print("%d × %d" % struct.unpack(">II", b[16:24]))' "$work/chart.png")

# The peer: the same chart's SVG (the gauge page's first chart, a year) through rsvg-convert.
peer="| rsvg-convert | (not installed: Debian's librsvg2-bin) | | |"
if command -v rsvg-convert >/dev/null; then
    curl -sf -o "$work/page.html" "$base/gauges/B1?range=365d&refresh=off" || fail "the gauge page failed"
    "$python" - "$work/page.html" "$work/chart.svg" <<'PY'
import sys
page = open(sys.argv[1], encoding="utf-8").read()
start = page.index("<svg ")
open(sys.argv[2], "w", encoding="utf-8").write(page[start:page.index("</svg>", start) + len("</svg>")])
PY
    : >"$work/peer"
    for _ in $(seq "$runs"); do
        s=$(date +%s%N)
        rsvg-convert -z 2 -b white -o "$work/peer.png" "$work/chart.svg"
        echo "$(( $(date +%s%N) - s ))" | awk '{ printf "%.6f\n", $1 / 1e9 }' >>"$work/peer"
    done
    # What of that is the process and loading: an empty 1 × 1 SVG.
    printf '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>' >"$work/empty.svg"
    : >"$work/start"
    for _ in $(seq "$runs"); do
        s=$(date +%s%N)
        rsvg-convert -z 2 -b white -o "$work/empty.png" "$work/empty.svg"
        echo "$(( $(date +%s%N) - s ))" | awk '{ printf "%.6f\n", $1 / 1e9 }' >>"$work/start"
    done
    read -r start_median _ < <(stats "$work/start")
    read -r peer_median peer_p95 < <(stats "$work/peer")
    peer_kb=$(awk -v s="$(wc -c <"$work/peer.png")" 'BEGIN { printf "%.1f", s / 1000 }')
    peer="| rsvg-convert $(rsvg-convert --version | awk '{ print $3 }') (peer) | the same SVG ($(wc -c <"$work/chart.svg") bytes) → PNG at 2×, over white, process start included | median $peer_median ms, p95 $peer_p95 ms; $peer_kb KB (an empty SVG: median $start_median ms) | |"
fi

echo "| benchmark | workload | measured | target |"
echo "|---|---|---|---|"
echo "| chart.png, cold (cache miss) | /gauges/ID/chart.png?range=365d over a year of 15-minute readings (105,120 stored), $runs requests | median $cold_median ms, p95 $cold_p95 ms; $kb KB, $dims px | ≤ $target_ms ms, ≤ $target_kb KB |"
echo "| chart.png, warm (from memory) | the same request again | median $warm_median ms, p95 $warm_p95 ms | |"
echo "| chart.png, the process's first | loads librsvg and the fonts, then as cold | $first_ms ms; daemon RSS $rss_before → $rss_after MiB | |"
echo "$peer"
awk -v m="$cold_median" -v t="$target_ms" -v s="$size" -v k="$target_kb" 'BEGIN { exit !(m <= t && s <= k * 1000) }'
