#!/usr/bin/env bash
# Flapping, noisy data from reading to webhook (issue 29): what is recorded, what is sent, and how
# long each step takes, for one klaxon or two side by side (BASE, e.g. the build before a change).
#
#   KLAXON=.build-release/release/klaxon BASE=/tmp/klaxon-old Benchmarks/episodes.sh
#   STATIONS=1000 HOURS=6 RUNS=3 MAX_AGE=0s Benchmarks/episodes.sh
#
# The workload: STATIONS (1,000) gauges, a reading every 5 minutes for HOURS (6) hours ending now,
# each wandering around the rules' thresholds with noise (so alerts flap: fire, change level,
# resolve, fire again), a `levels` rule (10 / 12 / 14) and a `threshold` rule (above 12, no `for`).
# `klaxon ingest`, `klaxon evaluate` and `klaxon dispatch --until-empty` run one after another on a
# new database, to nginx on 127.0.0.1 (`return 200`); each is timed (its
# process start included), best of RUNS (3). MAX_AGE sets `notify_max_age` (default: klaxon's own,
# 1h; `0s` sends every change as it comes, as a live feed would); BASE gets no such key (a build
# from before it knows none) unless BASE_MAX_AGE says `notify_max_age: …`.
#
# Exit status: 0, or 2 on a setup error. It reports; it does not judge.
set -euo pipefail
[[ -n "${KLAXON:-}" && "$KLAXON" != /* && -e "$KLAXON" ]] && KLAXON="$PWD/$KLAXON"
[[ -n "${BASE:-}" && "$BASE" != /* && -e "$BASE" ]] && BASE="$PWD/$BASE"
cd "$(dirname "$0")/.."
stations=${STATIONS:-1000}
hours=${HOURS:-6}
runs=${RUNS:-3}
python=${PYTHON:-/usr/bin/python3}
say() { echo "episodes.sh: $*" >&2; }
fail() { say "$*"; exit 2; }

if [[ -z "${KLAXON:-}" ]]; then
    swift build -c release --static-swift-stdlib --scratch-path .build-release --product klaxon >&2 || fail "the release build failed"
    KLAXON=$PWD/.build-release/release/klaxon
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/klaxon-episodes.XXXXXX")
cleanup() {
    local status=$?
    [[ -f "$work/nginx/nginx.pid" ]] && kill "$(cat "$work/nginx/nginx.pid")" 2>/dev/null
    [[ "${KEEP:-0}" == 1 ]] && say "kept $work" || rm -rf "$work"
    exit $status
}
trap cleanup EXIT

# nginx answers every webhook at once (`return 200`).
. Benchmarks/lib/nginx.sh
nginx_bin=$(command -v nginx || ls /usr/sbin/nginx 2>/dev/null || true)
[[ -n "$nginx_bin" ]] || fail "nginx is not installed (apt-get install nginx): nothing to measure"
start_nginx '$msec $uri'
sink=$nginx_port

# Noisy readings around the thresholds: a slow swell through the levels plus noise, so each gauge
# crosses 12 many times and its level moves up and down.
"$python" - "$work/readings.csv" "$stations" "$hours" <<'PY'
import math, random, sys, time
path, n, hours = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
random.seed(29)
steps = hours * 12
end = int(time.time()) // 300 * 300
with open(path, "w") as f:
    f.write("station,metric,time,value\n")
    for k in range(steps):
        t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end - (steps - 1 - k) * 300))
        f.write("".join(
            f"N{s:05d},level,{t},{12 + 2.5 * math.sin((k + 7 * s) / 11) + random.uniform(-0.8, 0.8):.2f}\n"
            for s in range(n)))
PY

mkdir -p "$work/rules"
cat >"$work/rules/rules.yaml" <<'YAML'
rules:
  - name: flood
    kind: levels
    metric: level
    levels: [{name: action, at: 10}, {name: minor, at: 12}, {name: moderate, at: 14}]
    notify: [hook]
  - name: high
    kind: threshold
    metric: level
    above: 12
    notify: [hook]
YAML
max_age=${MAX_AGE:+notify_max_age: $MAX_AGE}

# One run of one klaxon: ingest, evaluate, dispatch on a new database. Prints
# "ingest evaluate dispatch transitions sent superseded skipped".
once() {
    local bin=$1 age=$2 dir
    dir=$(mktemp -d "$work/run.XXXXXX")
    cat >"$dir/klaxon.yaml" <<YAML
database: $dir/klaxon.sqlite
rules: [$work/rules]
$age
receivers:
  - {name: hook, type: webhook, preset: generic, url: "http://127.0.0.1:$sink/hook"}
routes:
  - {receivers: [hook], group_by: [rule, station]}
YAML
    # Seconds a command took (wall, its process start included); a failed one ends the benchmark.
    timed() {
        local start end
        start=$(date +%s.%N)
        "$@" >/dev/null 2>"$dir/err" || { cat "$dir/err" >&2; fail "failed: $*"; }
        end=$(date +%s.%N)
        awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }'
    }
    local t1 t2 t3
    t1=$(timed "$bin" ingest --config "$dir/klaxon.yaml" "$work/readings.csv")
    t2=$(timed "$bin" evaluate --config "$dir/klaxon.yaml")
    t3=$(timed "$bin" dispatch --config "$dir/klaxon.yaml" --until-empty)
    [[ -s "$dir/klaxon.sqlite" ]] || fail "$bin did not make a database"
    local q="SELECT (SELECT count(*) FROM transitions), (SELECT count(*) FROM outbox WHERE state = 'sent'),
        (SELECT count(*) FROM outbox WHERE state = 'superseded'), (SELECT count(*) FROM outbox WHERE state = 'skipped')"
    echo "$t1 $t2 $t3 $(sqlite3 -separator ' ' "$dir/klaxon.sqlite" "$q")"
    rm -rf "$dir"
}

# Best of lines "ingest evaluate dispatch counts…" for each time, the counts of the last line.
best() {
    awk '
        NR == 1 || $1 < i { i = $1 } NR == 1 || $2 < e { e = $2 } NR == 1 || $3 < d { d = $3 }
        { t = $4; s = $5; f = $6; k = $7 }
        END { printf "%s %s %s %s %s %s %s\n", i, e, d, t, s, f, k }'
}

readings=$((stations * hours * 12))
echo "| klaxon | readings | transitions recorded | webhooks sent | folded | skipped | ingest | evaluate | dispatch | evaluate + dispatch |"
echo "|---|---|---|---|---|---|---|---|---|---|"
row() {
    read -r i e d t s f k <<<"$2"
    echo "| $1 | $readings | $t | $s | $f | $k | $i s | $e s | $d s | $(awk -v a="$e" -v b="$d" 'BEGIN { printf "%.2f", a + b }') s |"
}
# The two in turn, run by run, so a drift in the machine's speed falls on both.
: >"$work/new.runs"
: >"$work/base.runs"
for _ in $(seq "$runs"); do
    once "$KLAXON" "$max_age" >>"$work/new.runs"
    if [[ -n "${BASE:-}" ]]; then once "$BASE" "${BASE_MAX_AGE:-}" >>"$work/base.runs"; fi
done
new=$(best <"$work/new.runs")
row "this build" "$new"
if [[ -n "${BASE:-}" ]]; then
    old=$(best <"$work/base.runs")
    row "base" "$old"
    read -r _ e1 d1 _ <<<"$new"
    read -r _ e0 d0 _ <<<"$old"
    awk -v a="$e0" -v b="$d0" -v c="$e1" -v d="$d1" \
        'BEGIN { printf "evaluate + dispatch, base ÷ this build: %.2f×\n", (a + b) / (c + d) }'
fi
