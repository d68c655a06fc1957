#!/usr/bin/env bash
# Replay against promtool (issue 14, target 3): the same readings and the same threshold rule, run by
# `promtool test rules` (Prometheus' rule unit tests, evaluated step by step to the last one) and by
# `klaxon dry-run`, in the same run, process start included. Then the large replay: `klaxon dry-run`
# of 100 gauges × a year of 15-minute readings through a flapping rule (some 330,000 transitions),
# its time and peak RSS (`/usr/bin/time`).
#
#   Benchmarks/promtool.sh                       # builds the release klaxon, then runs
#   KLAXON=/path/to/klaxon Benchmarks/promtool.sh  # any binary (no build)
#   SERIES=2 STEPS=2000 KLAXON=… Benchmarks/promtool.sh   # a quick try
#
# The comparison: SERIES=5 series × STEPS=35040 readings (a year at 15 minutes), a random walk about
# 10 crossing 12 now and then and above it for the last few hours; the rule `value > 12` held for 30
# minutes. promtool gets the readings as explicit `input_series` values and one `alert_rule_test` at
# the last step expecting every series firing; klaxon gets the same numbers as a CSV readings file and
# a threshold rule with `for: 30m`. Each runs RUNS=3 times; the fastest run counts.
#
# promtool comes with Debian's `prometheus` package (`apt-get install prometheus`); without it the
# comparison is skipped. Nothing is installed here.
# Settings (environment): KLAXON, SERIES=5, STEPS=35040, RUNS=3, LARGE=1 (0 skips the large replay),
# WORK (where the work directory is made; default $TMPDIR or /tmp), KEEP=1 (keep it).
# Exit status: 0 the targets met (≥ 50× promtool; large replay < 3 s and < 100 MiB), 1 one missed, 2 a
# setup error.
set -euo pipefail
[[ -n "${KLAXON:-}" && "$KLAXON" != /* && -e "$KLAXON" ]] && KLAXON="$PWD/$KLAXON"
cd "$(dirname "$0")/.."

SERIES=${SERIES:-5}
STEPS=${STEPS:-35040}
RUNS=${RUNS:-3}
LARGE=${LARGE:-1}
if [[ -z "${KLAXON:-}" ]]; then
    swift build -c release --static-swift-stdlib --scratch-path .build-release --product klaxon >&2
    KLAXON=.build-release/release/klaxon
fi
[[ -x "$KLAXON" ]] || { echo "no klaxon binary at $KLAXON" >&2; exit 2; }
work=$(mktemp -d "${WORK:-${TMPDIR:-/tmp}}/klaxon-promtool.XXXXXX")
[[ "${KEEP:-}" == 1 ]] || trap 'rm -rf "$work"' EXIT
echo "work directory: $work" >&2

python3 - "$work" "$SERIES" "$STEPS" <<'PY'
import random, sys, os
work, series, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(14)
start = 1735689600  # 2025-01-01T00:00:00Z
values = []
for s in range(series):
    v, row = 10.0, []
    for k in range(steps):
        v += -0.01 * (v - 10) + rng.gauss(0, 0.3)
        x = round(v, 2)
        if k >= steps - 16:
            x = max(x, 13.0)  # above the threshold for the last four hours: firing at the end
        row.append(x)
    values.append(row)
with open(os.path.join(work, "readings.csv"), "w") as f:
    f.write("station,metric,time,value\n")
    import datetime
    for k in range(steps):
        t = datetime.datetime.fromtimestamp(start + 900 * k, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        for s in range(series):
            f.write(f"G{s},gage_height,{t},{values[s][k]}\n")
os.makedirs(os.path.join(work, "rules"), exist_ok=True)
with open(os.path.join(work, "rules", "high.yaml"), "w") as f:
    f.write("rules:\n  - name: high-water\n    kind: threshold\n    metric: gage_height\n"
            "    above: 12\n    for: 30m\n    severity: warning\n")
with open(os.path.join(work, "prom-rules.yml"), "w") as f:
    f.write("groups:\n  - name: bench\n    interval: 15m\n    rules:\n      - alert: HighWater\n"
            "        expr: gage_height > 12\n        for: 30m\n        labels: {severity: warning}\n")
last = 900 * (steps - 1)
with open(os.path.join(work, "prom-test.yml"), "w") as f:
    f.write("rule_files: [prom-rules.yml]\nevaluation_interval: 15m\ntests:\n  - interval: 15m\n    input_series:\n")
    for s in range(series):
        f.write(f"      - series: 'gage_height{{station=\"G{s}\"}}'\n        values: '{' '.join(map(str, values[s]))}'\n")
    f.write(f"    alert_rule_test:\n      - eval_time: {last}s\n        alertname: HighWater\n        exp_alerts:\n")
    for s in range(series):
        f.write(f"          - exp_labels: {{severity: warning, station: G{s}}}\n")
PY

# The fastest of RUNS runs of a command, in seconds (process start included); fails if it fails.
fastest() {
    local best="" t0 t1 s
    for _ in $(seq "$RUNS"); do
        t0=$(date +%s%N)
        "$@" >"$work/out" 2>"$work/err" || { echo "failed: $*" >&2; tail -5 "$work/err" "$work/out" >&2; return 1; }
        t1=$(date +%s%N)
        s=$(( t1 - t0 ))
        [[ -z "$best" || $s -lt $best ]] && best=$s
    done
    awk -v ns="$best" 'BEGIN { printf "%.3f", ns / 1e9 }'
}

status=0
readings=$((SERIES * STEPS))
klaxon_s=$(fastest "$KLAXON" dry-run --rules "$work/rules" --readings "$work/readings.csv" --format json)
transitions=$(grep -o '[0-9]* transitions' "$work/err" | head -1)
echo "klaxon dry-run: $SERIES series × $STEPS readings ($readings), $transitions: $klaxon_s s"
if command -v promtool >/dev/null; then
    prom_s=$( (cd "$work" && fastest promtool test rules prom-test.yml) )
    ratio=$(awk -v p="$prom_s" -v k="$klaxon_s" 'BEGIN { printf "%.1f", p / k }')
    met=$(awk -v r="$ratio" 'BEGIN { print (r >= 50) ? "PASS" : "MISS" }')
    [[ "$met" == PASS ]] || status=1
    echo "promtool test rules ($(promtool --version 2>&1 | head -1 | awk '{print $3}')): $prom_s s"
    echo "klaxon is ${ratio}× promtool (target ≥ 50×): $met"
else
    echo "promtool not found: the comparison is skipped (install it with: apt-get install prometheus)"
fi

if [[ "$LARGE" == 1 ]]; then
    # The large replay: 100 gauges × a year of 15-minute readings about a threshold they cross often
    # (an AR(1) walk about 10), one threshold rule at 10 without `for`: some 330,000 transitions.
    echo "generating the large replay's readings (3,504,000)…" >&2
    python3 - "$work" <<'PY'
import random, sys, os, datetime
work = sys.argv[1]
rng = random.Random(3)
start = 1735689600
walk = [0.0] * 100
with open(os.path.join(work, "flapping.csv"), "w") as f:
    f.write("station,metric,time,value\n")
    for k in range(35040):
        t = datetime.datetime.fromtimestamp(start + 900 * k, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        lines = []
        for s in range(100):
            walk[s] = 0.955 * walk[s] + rng.gauss(0, 0.3)
            lines.append(f"F{s:03d},gage_height,{t},{10 + walk[s]:.2f}\n")
        f.write("".join(lines))
os.makedirs(os.path.join(work, "flapping-rules"), exist_ok=True)
with open(os.path.join(work, "flapping-rules", "flap.yaml"), "w") as f:
    f.write("rules:\n  - name: flapping\n    kind: threshold\n    metric: gage_height\n    above: 10\n    severity: info\n")
PY
    /usr/bin/time -f "%e %M" -o "$work/time" "$KLAXON" dry-run --rules "$work/flapping-rules" \
        --readings "$work/flapping.csv" --format json >/dev/null 2>"$work/err" || { tail -5 "$work/err" >&2; exit 2; }
    read -r seconds kib <"$work/time"
    transitions=$(grep -o '[0-9]* transitions' "$work/err" | head -1)
    met=$(awk -v s="$seconds" -v k="$kib" 'BEGIN { print (s < 3 && k < 100 * 1024) ? "PASS" : "MISS" }')
    [[ "$met" == PASS ]] || status=1
    echo "klaxon dry-run: 100 series × 35040 readings (3,504,000), $transitions: $seconds s, $((kib / 1024)) MiB peak RSS (target < 3 s, < 100 MiB): $met"
fi
exit $status
