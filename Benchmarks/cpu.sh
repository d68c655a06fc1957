#!/usr/bin/env bash
# The CPU work of the replay and ingest paths (issue 44), measured so that a busy, shared machine does
# not move it: per path, instructions, CPU time (task-clock) and peak RSS; with OLD=binary, the same
# for that binary in turn (paired, same input) and its outputs compared byte for byte with KLAXON's.
#
#   KLAXON=.build-release/release/klaxon OLD=/tmp/klaxon-before Benchmarks/cpu.sh
#   KLAXON=… ONLY="json text" RUNS=5 Benchmarks/cpu.sh
#
# The paths (rows): `json`, `text`, `explain` (text with --explain) and `json-explain`: `klaxon dry-run` of
# Benchmarks/promtool.sh's large replay, 100 flapping series × 35,040 readings (3,504,000; some 336,000
# transitions), one threshold rule at 10; `for`: the same readings with a second rule held 30 minutes
# (`for: 30m`), `--format json`; `ingest`: `klaxon ingest` of quick.sh's 1,000,000 readings into a new
# SQLite file.
#
# Instructions: perf's `instructions:u` when the machine has a PMU; a VM without one (perf says "not
# supported") gets valgrind's count instead (callgrind on a stripped copy, on a tenth of each input:
# 350,400 readings replayed, 100,000 ingested; process start included; valgrind's own memcpy counts more than glibc's, so read
# its figures as paired ratios, not as absolute costs). task-clock: the CPU time of the whole
# process (every thread), the best of RUNS=3, so load on the other core barely moves it. RSS: the peak,
# from /usr/bin/time.
#
# Settings (environment): KLAXON (default .build-release/release/klaxon, which must exist), OLD, RUNS=3,
# ONLY (rows, default "json text explain json-explain for ingest"), WORK (where the data go; default
# $TMPDIR or /tmp; the data are kept there and reused), VALGRIND=auto|0|1.
# Prints a Markdown table on stdout. Exit status: 0, or 1 when OLD's output differs from KLAXON's, 2 on a
# setup error.
set -euo pipefail
[[ -n "${KLAXON:-}" && "$KLAXON" != /* && -e "$KLAXON" ]] && KLAXON="$PWD/$KLAXON"
[[ -n "${OLD:-}" && "$OLD" != /* && -e "$OLD" ]] && OLD="$PWD/$OLD"
cd "$(dirname "$0")/.."
KLAXON=${KLAXON:-$PWD/.build-release/release/klaxon}
RUNS=${RUNS:-3}
ONLY=${ONLY:-json text explain json-explain for ingest}
[[ -x "$KLAXON" ]] || { echo "cpu.sh: no klaxon binary at $KLAXON (build it, or give KLAXON=)" >&2; exit 2; }
[[ -z "${OLD:-}" || -x "$OLD" ]] || { echo "cpu.sh: no binary at OLD=$OLD" >&2; exit 2; }
command -v perf >/dev/null || { echo "cpu.sh: needs perf (apt-get install linux-perf)" >&2; exit 2; }
data=${WORK:-${TMPDIR:-/tmp}}/klaxon-cpu-data
mkdir -p "$data"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/klaxon-cpu.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
say() { echo "cpu: $*" >&2; }

# --- Data (made once; the generators are promtool.sh's and quick.sh's, same seeds) ---------------------
if [[ ! -s "$data/flapping.csv" || ! -s "$data/ingest.csv" ]]; then
    say "generating the data in $data"
    python3 - "$data" <<'PY'
import random, sys, os, datetime, math, time
work = sys.argv[1]
rng = random.Random(3)
start = 1735689600
walk = [0.0] * 100
with open(os.path.join(work, "flapping.csv.partial"), "w") as f:
    f.write("station,metric,time,value\n")
    for k in range(35040):
        t = datetime.datetime.fromtimestamp(start + 900 * k, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        lines = []
        for s in range(100):
            walk[s] = 0.955 * walk[s] + rng.gauss(0, 0.3)
            lines.append(f"F{s:03d},gage_height,{t},{10 + walk[s]:.2f}\n")
        f.write("".join(lines))
os.rename(os.path.join(work, "flapping.csv.partial"), os.path.join(work, "flapping.csv"))
with open(os.path.join(work, "ingest.csv.partial"), "w") as f:
    f.write("station,metric,time,value\n")
    written, step = 0, 0
    while written < 1000000:
        iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + step * 900))
        k = min(1000, 1000000 - written)
        f.write("".join(f"G{s:05d},gage_height,{iso},{8 + 3 * math.sin(step / 96 * 0.7 + s):.2f}\n" for s in range(k)))
        written += k
        step += 1
os.rename(os.path.join(work, "ingest.csv.partial"), os.path.join(work, "ingest.csv"))
PY
fi
head -n 350401 "$data/flapping.csv" >"$scratch/tenth.csv"
head -n 100001 "$data/ingest.csv" >"$scratch/ingest-tenth.csv"
mkdir -p "$scratch/flap" "$scratch/for"
flap='rules:
  - name: flapping
    kind: threshold
    metric: gage_height
    above: 10
    severity: info'
echo "$flap" >"$scratch/flap/flap.yaml"
printf '%s\n%s\n' "$flap" '  - name: held
    kind: threshold
    metric: gage_height
    above: 10.3
    for: 30m
    severity: warning' >"$scratch/for/flap.yaml"

# The command of a row for a binary ($1) and a readings file ($3); $2 the row.
command_of() {
    case $2 in
        json) echo "$1 dry-run --rules $scratch/flap --readings $3 --format json" ;;
        text) echo "$1 dry-run --rules $scratch/flap --readings $3 --format text" ;;
        explain) echo "$1 dry-run --rules $scratch/flap --readings $3 --format text --explain" ;;
        json-explain) echo "$1 dry-run --rules $scratch/flap --readings $3 --format json --explain" ;;
        for) echo "$1 dry-run --rules $scratch/for --readings $3 --format json" ;;
        ingest) echo "$1 ingest --db $scratch/ingest.sqlite ${3/flapping.csv/ingest.csv}" ;;
    esac
}

pmu=1
perf stat -x, -e instructions:u true 2>&1 >/dev/null | grep -q "not supported" && pmu=0
valgrind=${VALGRIND:-auto}
[[ "$valgrind" == auto ]] && { ((pmu == 0)) && command -v valgrind >/dev/null && valgrind=1 || valgrind=0; }
if ((valgrind == 1)); then
    for b in KLAXON OLD; do
        if [[ -n "${!b:-}" ]]; then strip -o "$scratch/$b.stripped" "${!b}"; fi
    done
fi

# One measurement of binary $1 (KLAXON or OLD) on row $2: "instructions task-clock-ms rss-kib", best of RUNS.
measure() {
    local bin=${!1} row=$2 best="" rss="" ins="-" i ms kib
    for i in $(seq "$RUNS"); do
        rm -f "$scratch"/ingest.sqlite*
        # shellcheck disable=SC2046
        perf stat -x, -e task-clock$( ((pmu)) && echo ",instructions:u") -o "$scratch/stat" \
            /usr/bin/time -f "%M" -o "$scratch/time" $(command_of "$bin" "$row" "$data/flapping.csv") \
            >"$scratch/$1.$row.out" 2>"$scratch/$1.$row.err" || { say "$1 $row failed: $(tail -2 "$scratch/$1.$row.err")"; return 1; }
        ms=$(awk -F, '$3 == "task-clock" { printf "%.0f", $1 }' "$scratch/stat")
        kib=$(tail -n 1 "$scratch/time")
        if [[ -z "$best" || $ms -lt $best ]]; then best=$ms; fi
        if [[ -z "$rss" || $kib -lt $rss ]]; then rss=$kib; fi
        ((pmu)) && ins=$(awk -F, '$3 ~ /^instructions/ { print $1 }' "$scratch/stat")
    done
    if ((valgrind == 1)); then
        local input=$scratch/tenth.csv
        [[ "$row" == ingest ]] && input=$scratch/ingest-tenth.csv
        rm -f "$scratch"/ingest.sqlite*
        # shellcheck disable=SC2046
        valgrind --tool=callgrind --callgrind-out-file=/dev/null $(command_of "$scratch/$1.stripped" "$row" "$input") \
            >/dev/null 2>"$scratch/vg" || { say "valgrind $1 $row failed: $(tail -2 "$scratch/vg")"; return 1; }
        ins=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$scratch/vg" | tail -n 1)
    fi
    echo "$ins $best $rss"
}

fmt() { awk -v v="$1" 'BEGIN { if (v == "-" || v == "") print "-"; else if (v >= 1e9) printf "%.2f G", v / 1e9; else printf "%.0f M", v / 1e6 }'; }
rel() { awk -v n="$1" -v o="$2" 'BEGIN { if (n > 0 && o > 0) printf "%+.0f %%", 100 * (n - o) / o; else print "-" }'; }

status=0
what="instructions: perf instructions:u, whole input"
((valgrind == 1)) && what="instructions: valgrind (callgrind) count on a tenth of each input (350,400 readings replayed, 100,000 ingested)"
((pmu == 0 && valgrind == 0)) && what="instructions: not counted (no PMU here, and valgrind off or absent)"
echo "## CPU work per path: $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "$what; task-clock: CPU time of the process, best of $RUNS; RSS: peak."
echo
if [[ -n "${OLD:-}" ]]; then
    echo "| path | instructions before | after | change | task-clock before | after | change | RSS before | after | output |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
else
    echo "| path | instructions | task-clock | RSS |"
    echo "|---|---|---|---|"
fi
for row in $ONLY; do
    say "$row"
    read -r ni nt nr < <(measure KLAXON "$row") || { status=2; continue; }
    if [[ -n "${OLD:-}" ]]; then
        read -r oi ot orss < <(measure OLD "$row") || { status=2; continue; }
        same="identical"
        if [[ "$row" == ingest ]]; then
            same="n/a"
        elif ! cmp -s "$scratch/KLAXON.$row.out" "$scratch/OLD.$row.out"; then
            same="DIFFERS"
            status=1
        fi
        echo "| $row | $(fmt "$oi") | $(fmt "$ni") | $(rel "$ni" "$oi") | $ot ms | $nt ms | $(rel "$nt" "$ot") | $((orss / 1024)) MiB | $((nr / 1024)) MiB | $same |"
    else
        echo "| $row | $(fmt "$ni") | $nt ms | $((nr / 1024)) MiB |"
    fi
done
exit $status
