#!/usr/bin/env bash
# The quick check (issue 39, item 17): each headline figure as a ratio against its peer measured in the
# same run, beside the committed baseline, so that a slide in speed shows whatever the machine's mood.
# Run it as `Benchmarks/run.sh --quick` (this script is what that runs).
#
#   Benchmarks/run.sh --quick                       # builds the release klaxon if needed, then 2–3 minutes
#   KLAXON=/path/to/klaxon Benchmarks/run.sh --quick
#   Benchmarks/run.sh --quick --update-baseline     # also rewrites Benchmarks/baseline-quick.tsv
#
# Every ratio is peer time ÷ klaxon time, so HIGHER IS BETTER for Klaxon (above 1: Klaxon was faster);
# for PostgreSQL the "peer" is Klaxon on SQLite and the ratio SQLite time ÷ PostgreSQL time. The rows:
#   alertmanager  `klaxon run` end to end vs Alertmanager, live data (readings stamped a minute ago):
#                 Benchmarks/alertmanager.sh, N=5000 alerts to nginx, best of RUNS=3, no slow sink
#   promtool      `klaxon dry-run` vs `promtool test rules`, 5 flapping series × 35,040 readings, `for:
#                 30m`, process start included: Benchmarks/promtool.sh, best of 3
#   replay-3.5M   `klaxon dry-run` of 100 series × 35,040 readings (3,504,000; the flapping data of
#                 Benchmarks/promtool.sh, some 336,000 transitions) vs awk (mawk) finding the same
#                 threshold crossings in the same CSV (its count is checked against klaxon's); best of 3
#   ingest-1M     `klaxon ingest` of 1,000,000 readings (1,000 stations, Benchmarks/postgres.sh's data) into
#                 a new SQLite file vs `sqlite3 .import` of the same CSV into a new file's table with
#                 klaxon's unique key (station, metric, time), process start included; best of 3
#   postgres      end to end (the alertmanager row's workload, 5,000 alerts to nginx) on PostgreSQL, one
#                 daemon, vs the same on SQLite: Benchmarks/postgres.sh SKIP_INGEST=1, best of 3
# A row is FLAGged when its ratio is more than 20 % below the baseline's (ratio < 0.8 × baseline). A peer
# that is not installed (Alertmanager, promtool, sqlite3, PostgreSQL, or nginx for the end-to-end rows)
# makes its row "peer absent", not a failure.
#
# The build: with KLAXON=path, none. Otherwise .build-release/release/klaxon is used as it is when it is
# newer than every file under Sources/ and than Package.swift; else it is built first (`swift build -c
# release --static-swift-stdlib --scratch-path .build-release --product klaxon`, 10–20 minutes here).
#
# Each run's ratios are kept in bench-data/quick/RUN.tsv (with the klaxon binary's SHA-256) and its logs in
# bench-data/quick/RUN/. --update-baseline writes, per row, the median ratio over this run and the earlier
# runs there of the same binary. Settings (environment): KLAXON, RUNS=3 (each row the best of RUNS; 1
# for a rougher, faster look), BASELINE (default Benchmarks/baseline-quick.tsv), THRESHOLD=20 (%), ONLY
# (rows to run, e.g. "promtool ingest-1M"), and for a trial of the script itself AM_N, PG_N, INGEST_M,
# PROMTOOL_STEPS (rows whose sizes differ from the baseline's are compared but marked).
# Exit status: 0 no row flagged; 1 a row flagged; 2 a setup error (a build, a script or a peer that
# failed; the other rows are still run and printed).
set -euo pipefail
[[ -n "${KLAXON:-}" && "$KLAXON" != /* && -e "$KLAXON" ]] && KLAXON="$PWD/$KLAXON"
cd "$(dirname "$0")/.."
root=$PWD

update=0
for arg in "$@"; do
    case $arg in
        --quick) ;;
        --update-baseline) update=1 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "quick.sh: unknown argument \"$arg\" (--quick takes only --update-baseline)" >&2; exit 2 ;;
    esac
done

runs=${RUNS:-3}
baseline=${BASELINE:-Benchmarks/baseline-quick.tsv}
threshold=${THRESHOLD:-20}
am_n=${AM_N:-5000}
pg_n=${PG_N:-5000}
ingest_m=${INGEST_M:-1000000}
promtool_steps=${PROMTOOL_STEPS:-35040}
only=${ONLY:-alertmanager promtool replay-3.5M ingest-1M postgres}

say() { echo "quick: $*" >&2; }
setup_error=0

# --- The binary ----------------------------------------------------------------------------------------
if [[ -z "${KLAXON:-}" ]]; then
    KLAXON=$root/.build-release/release/klaxon
    if [[ ! -x "$KLAXON" || -n "$(find Sources Package.swift -newer "$KLAXON" -print -quit)" ]]; then
        say "building the release klaxon (10–20 minutes on 2 busy cores)"
        swift build -c release --static-swift-stdlib --scratch-path .build-release --product klaxon >&2 ||
            { say "the release build failed"; exit 2; }
    else
        say "using $KLAXON (newer than Sources/ and Package.swift; no build)"
    fi
fi
[[ -x "$KLAXON" ]] || { say "no executable klaxon at $KLAXON"; exit 2; }
sha=$(sha256sum "$KLAXON" | cut -c1-16)
version=$("$KLAXON" --version 2>/dev/null | head -n 1 || true)

stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=bench-data/quick
logs=$out/$stamp
mkdir -p "$logs"
work=$(mktemp -d "${TMPDIR:-/tmp}/klaxon-quick.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$out/$stamp.tsv
{
    echo "# klaxon-sha256: $sha"
    echo "# klaxon: $KLAXON ($version)"
    echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$results"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
t_start=$EPOCHREALTIME

# One row: key, workload (sizes included), klaxon seconds, peer seconds, ratio (or a word: "peer absent",
# "error"), peer's name.
rows=$work/rows.tsv
: >"$rows"
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$rows"; }
ratio() { awk -v p="$1" -v k="$2" 'BEGIN { if (p > 0 && k > 0) printf "%.3f", p / k; else print "-" }'; }
best() { sort -g | head -n 1; }
wanted() { [[ " $only " == *" $1 "* ]]; }
# Runs a script with its stdout in $logs/$1.out and stderr in $logs/$1.log; its exit status 0 or 1
# (a target missed: not ours to judge here) is success, 2 or more a failure.
run_script() { # $1 name, then the command
    local name=$1 status=0
    shift
    "$@" >"$logs/$name.out" 2>"$logs/$name.log" || status=$?
    ((status <= 1)) || { say "$name: exit $status (see $logs/$name.log): $(tail -n 2 "$logs/$name.log" | tr '\n' ' ')"; return 1; }
}
# The wall time of a command in seconds (3 decimals); its output in $logs/$1.*. Fails if it fails.
timed() { # $1 log name, then the command
    local name=$1 t0 t1
    shift
    t0=$EPOCHREALTIME
    "$@" >"$logs/$name.out" 2>"$logs/$name.log" || { say "$name failed (see $logs/$name.log)"; return 1; }
    t1=$EPOCHREALTIME
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
nginx_bin=$(command -v nginx || ls /usr/sbin/nginx 2>/dev/null || true)
am_bin=$(command -v prometheus-alertmanager || command -v alertmanager || true)
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5n | tail -n 1)
[[ -n "$pg_bin" && -x "$pg_bin/initdb" && -x "$pg_bin/postgres" && -x "$pg_bin/psql" ]] || pg_bin=
field() { awk -F'|' -v k="$1" 'index($2, k) == 2 { gsub(/ /, "", $3); print $3; exit }' "$2"; }

# --- alertmanager: klaxon run vs Alertmanager, end to end --------------------------------------------
if wanted alertmanager; then
    w="klaxon run vs Alertmanager, $am_n alerts to nginx, live data"
    if [[ -z "$nginx_bin" ]]; then
        row alertmanager "$w" - - "peer absent (nginx)" nginx
    elif [[ -z "$am_bin" ]]; then
        row alertmanager "$w" - - "peer absent" Alertmanager
    else
        say "alertmanager: $am_n alerts, best of $runs (Benchmarks/alertmanager.sh)"
        if run_script alertmanager env KLAXON="$KLAXON" N="$am_n" RUNS="$runs" SLOW=0 Benchmarks/alertmanager.sh; then
            k=$(field "klaxon run" "$logs/alertmanager.out")
            p=$(field "Alertmanager" "$logs/alertmanager.out")
            row alertmanager "$w" "$k" "$p" "$(ratio "$p" "$k")" "Alertmanager $("$am_bin" --version 2>&1 | sed -n 's/.*version \([0-9.]*\).*/\1/p' | head -n 1)"
        else
            row alertmanager "$w" - - error Alertmanager
            setup_error=1
        fi
    fi
fi

# --- promtool, and the 3.5 M replay (its data comes from Benchmarks/promtool.sh) ---------------------
if wanted promtool || wanted replay-3.5M; then
    large=0
    wanted replay-3.5M && large=1
    say "promtool: 5 series × $promtool_steps readings, best of $runs$([[ $large == 1 ]] && echo "; generating the 3.5 M replay's data") (Benchmarks/promtool.sh)"
    if run_script promtool env KLAXON="$KLAXON" SERIES=5 STEPS="$promtool_steps" RUNS="$runs" LARGE="$large" \
        WORK="$work" KEEP=1 Benchmarks/promtool.sh; then
        pt_ok=1
    else
        pt_ok=0
        setup_error=1
    fi
    if wanted promtool; then
        w="klaxon dry-run vs promtool test rules, 5 flapping series × $promtool_steps readings"
        if ((pt_ok == 0)); then
            row promtool "$w" - - error promtool
        elif ! command -v promtool >/dev/null; then
            row promtool "$w" - - "peer absent" promtool
        else
            k=$(sed -n 's/^klaxon dry-run: 5 series.*: \([0-9.]*\) s$/\1/p' "$logs/promtool.out")
            p=$(sed -n 's/^promtool test rules.*: \([0-9.]*\) s$/\1/p' "$logs/promtool.out")
            row promtool "$w" "$k" "$p" "$(ratio "$p" "$k")" "promtool $(promtool --version 2>&1 | head -n 1 | awk '{ print $3 }' | sed 's/+.*//')"
        fi
    fi
    if wanted replay-3.5M; then
        w="klaxon dry-run vs awk, 100 flapping series × 35040 readings (3,504,000)"
        flapping=$(ls "$work"/klaxon-promtool.*/flapping.csv 2>/dev/null | head -n 1 || true)
        if ((pt_ok == 0)) || [[ -z "$flapping" ]]; then
            row replay-3.5M "$w" - - error awk
            setup_error=1
        else
            rules=$(dirname "$flapping")/flapping-rules
            transitions=$(sed -n 's/^klaxon dry-run: 100 series.*, \([0-9]*\) transitions:.*/\1/p' "$logs/promtool.out")
            # The peer: the same crossings of 10 per series (firing at or above, resolved below), counted.
            awk_peer() { awk -F, 'NR > 1 { a = ($4 >= 10); if (a != s[$1]) { s[$1] = a; n++ } } END { print n + 0 }' "$1"; }
            # Klaxon and awk in turn, RUNS times each (promtool.sh's own run of the replay only warmed the cache).
            say "replay-3.5M: klaxon dry-run and awk in turn, $runs times each"
            times=$work/replay.times
            ptimes=$work/replay-awk.times
            : >"$times"
            : >"$ptimes"
            for i in $(seq "$runs"); do
                if t=$(timed "replay-klaxon-$i" "$KLAXON" dry-run --rules "$rules" --readings "$flapping" --format json); then
                    echo "$t" >>"$times"
                else
                    setup_error=1
                fi
                if t=$(timed "replay-awk-$i" awk_peer "$flapping"); then echo "$t" >>"$ptimes"; else setup_error=1; fi
            done
            say "replay-3.5M: klaxon $(paste -sd' ' "$times") s; awk $(paste -sd' ' "$ptimes") s"
            awk_count=$(cat "$logs/replay-awk-1.out" 2>/dev/null || true)
            if [[ -n "$transitions" && "$awk_count" != "$transitions" ]]; then
                say "replay-3.5M: awk counted $awk_count crossings, klaxon reported $transitions transitions"
            fi
            k=$(best <"$times")
            p=$(best <"$ptimes")
            row replay-3.5M "$w" "$k" "$p" "$(ratio "$p" "$k")" "awk (mawk; same count: $([[ "$awk_count" == "$transitions" ]] && echo yes || echo "no, $awk_count vs $transitions"))"
        fi
    fi
fi

# --- ingest: klaxon ingest vs sqlite3 .import -----------------------------------------------------------
if wanted ingest-1M; then
    w="klaxon ingest vs sqlite3 .import, $ingest_m readings into a new file"
    if ! command -v sqlite3 >/dev/null; then
        row ingest-1M "$w" - - "peer absent" sqlite3
    else
        csv=$work/ingest.csv
        say "ingest-1M: generating $ingest_m readings, then best of $runs each way"
        # The data of Benchmarks/postgres.sh's ingest: 1,000 stations × 15-minute readings, time by time.
        python3 - "$csv" "$ingest_m" 1000 <<'PY'
import math, sys, time
path, m, stations = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
base = 1735689600  # 2025-01-01T00:00:00Z
with open(path, "w") as f:
    f.write("station,metric,time,value\n")
    written, step = 0, 0
    while written < m:
        iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(base + step * 900))
        k = min(stations, m - written)
        f.write("".join(f"G{s:05d},gage_height,{iso},{8 + 3 * math.sin(step / 96 * 0.7 + s):.2f}\n"
                        for s in range(k)))
        written += k
        step += 1
PY
        ktimes=$work/ingest.times
        ptimes=$work/import.times
        : >"$ktimes"
        : >"$ptimes"
        for i in $(seq "$runs"); do
            rm -f "$work"/ingest-*.sqlite*
            if t=$(timed "ingest-klaxon-$i" "$KLAXON" ingest --db "$work/ingest-klaxon.sqlite" "$csv"); then echo "$t" >>"$ktimes"; else setup_error=1; fi
            if t=$(timed "ingest-sqlite3-$i" sqlite3 "$work/ingest-sqlite3.sqlite" \
                "CREATE TABLE readings(station TEXT NOT NULL, metric TEXT NOT NULL, time TEXT NOT NULL, value REAL, UNIQUE (station, metric, time))" \
                ".import --csv --skip 1 $csv readings"); then
                got=$(sqlite3 "$work/ingest-sqlite3.sqlite" "SELECT count(*) FROM readings")
                if [[ "$got" == "$ingest_m" ]]; then echo "$t" >>"$ptimes"; else say "sqlite3 .import stored $got rows of $ingest_m"; setup_error=1; fi
            else
                setup_error=1
            fi
        done
        rm -f "$work"/ingest-*.sqlite* "$csv"
        say "ingest-1M: klaxon $(paste -sd' ' "$ktimes") s; sqlite3 .import $(paste -sd' ' "$ptimes") s"
        k=$(best <"$ktimes")
        p=$(best <"$ptimes")
        if [[ -n "$k" && -n "$p" ]]; then
            row ingest-1M "$w" "$k" "$p" "$(ratio "$p" "$k")" "sqlite3 $(sqlite3 --version | cut -d' ' -f1) .import (keyed table)"
        else
            row ingest-1M "$w" "${k:--}" "${p:--}" error sqlite3
        fi
    fi
fi

# --- postgres: end to end on PostgreSQL vs SQLite ----------------------------------------------------
if wanted postgres; then
    w="klaxon run on PostgreSQL (1 daemon) vs on SQLite, $pg_n alerts to nginx"
    if [[ -z "$nginx_bin" ]]; then
        row postgres "$w" - - "peer absent (nginx)" SQLite
    elif [[ -z "$pg_bin" ]]; then
        row postgres "$w" - - "peer absent (PostgreSQL)" SQLite
    else
        say "postgres: $pg_n alerts on SQLite, PostgreSQL ×1 and ×2, best of $runs (Benchmarks/postgres.sh)"
        if run_script postgres env KLAXON="$KLAXON" N="$pg_n" RUNS="$runs" SKIP_INGEST=1 Benchmarks/postgres.sh; then
            k=$(field "PostgreSQL, one daemon" "$logs/postgres.out")
            p=$(field "SQLite, one daemon" "$logs/postgres.out")
            row postgres "$w" "$k" "$p" "$(ratio "$p" "$k")" "klaxon on SQLite (PostgreSQL $("$pg_bin/postgres" --version | awk '{ print $3 }'))"
        else
            row postgres "$w" - - error SQLite
            setup_error=1
        fi
    fi
fi

# --- The table -----------------------------------------------------------------------------------------
awk -F'\t' '{ print $1 "\t" $2 "\t" $5 "\t" $3 "\t" $4 }' "$rows" >>"$results"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
took=$(awk -v a="$t_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')

# The baseline's ratio of a key and its workload ("" when none).
base_ratio() { [[ -f "$baseline" ]] && awk -F'\t' -v k="$1" '!/^#/ && $1 == k { print $3; exit }' "$baseline" || true; }
base_workload() { [[ -f "$baseline" ]] && awk -F'\t' -v k="$1" '!/^#/ && $1 == k { print $2; exit }' "$baseline" || true; }
base_date=$([[ -f "$baseline" ]] && sed -n 's/^# date: //p' "$baseline" | head -n 1 || true)
flags=0
echo "## Quick check: $(date -u '+%Y-%m-%d %H:%M UTC'), klaxon ${version:-?} ($sha), best of $runs"
echo
echo "Ratio = peer time ÷ klaxon time: higher is better for Klaxon. FLAG: more than $threshold % below the baseline${base_date:+ ($base_date)}."
echo
echo "| workload | klaxon (s) | peer (s) | ratio | baseline ratio | change |"
echo "|---|---|---|---|---|---|"
while IFS=$'\t' read -r key w k p r peer; do
    b=$(base_ratio "$key")
    change=
    if [[ "$r" =~ ^[0-9.]+$ && "$b" =~ ^[0-9.]+$ ]]; then
        change=$(awk -v r="$r" -v b="$b" 'BEGIN { printf "%+.0f %%", (r / b - 1) * 100 }')
        if awk -v r="$r" -v b="$b" -v t="$threshold" 'BEGIN { exit !(r < b * (1 - t / 100)) }'; then
            change="$change **FLAG**"
            flags=1
        fi
        [[ "$(base_workload "$key")" == "$w" ]] || change="$change (sizes differ from the baseline's)"
    elif [[ -z "$b" ]]; then
        change="no baseline"
    fi
    [[ "$r" =~ ^[0-9.]+$ ]] && r=$(printf '%.2f×' "$r")
    [[ "$b" =~ ^[0-9.]+$ ]] && b=$(printf '%.2f×' "$b")
    echo "| $w | $k | $p ($peer) | $r | ${b:--} | $change |"
done <"$rows"
echo
echo "Load average $load_start at the start, $load_end at the end ($(nproc) cores); $took s. Logs: $logs/."

# --- The baseline --------------------------------------------------------------------------------------
if ((update == 1)); then
    same=$(grep -l "^# klaxon-sha256: $sha\$" "$out"/*.tsv)
    n=$(awk -F'\t' 'NR == FNR { if (!/^#/) w[$1] = $2; next }
        !/^#/ && ($1 in w) && w[$1] == $2 { c[FILENAME] = 1 } END { for (f in c) k++; print k + 0 }' "$results" $same)
    tmp=$work/baseline.tsv
    {
        echo "# The quick check's baseline (Benchmarks/run.sh --quick; rewritten by --quick --update-baseline)."
        echo "# ratio = peer time ÷ klaxon time, measured in the same run: higher is better for Klaxon. Each ratio"
        echo "# is the median over the $n run(s) of one build: sha256 $sha…, built from the sources of commit"
        echo "# $(git rev-parse --short HEAD 2>/dev/null || echo '?') (\`$version\`)."
        echo "# machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')), Linux $(uname -r),"
        echo "# SHARED and busy (other engineers build and test on the same cores; load average $load_start at the"
        echo "# start of the last run): read ratios, not seconds; wall times here vary by 30 % between identical runs."
        echo "# date: $(date -u +%Y-%m-%d)"
        printf '# key\tworkload\tratio\truns\n'
        # Per row of this run, the ratios of the same workload (sizes included) in the runs of this build.
        # shellcheck disable=SC2086
        awk -F'\t' '
            NR == FNR { if (!/^#/ && $3 ~ /^[0-9.]+$/) { want[$1] = $2; order[++k] = $1 }; next }
            !/^#/ && ($1 in want) && want[$1] == $2 && $3 ~ /^[0-9.]+$/ { v[$1, ++n[$1]] = $3 }
            END {
                for (i = 1; i <= k; i++) {
                    c = order[i]; m = n[c]
                    # insertion sort of the m values
                    for (a = 2; a <= m; a++) for (b = a; b > 1 && v[c, b - 1] + 0 > v[c, b] + 0; b--) {
                        t = v[c, b]; v[c, b] = v[c, b - 1]; v[c, b - 1] = t
                    }
                    med = (m % 2) ? v[c, (m + 1) / 2] : (v[c, m / 2] + v[c, m / 2 + 1]) / 2
                    vals = ""
                    for (j = 1; j <= m; j++) vals = vals (j > 1 ? ", " : "") v[c, j]
                    printf "%s\t%s\t%.3f\t%s\n", c, want[c], med, vals
                }
            }' "$results" $same >"$work/new-rows.tsv"
        cat "$work/new-rows.tsv"
        # Rows not measured in this run (a peer absent, an error, ONLY) keep their old baseline.
        if [[ -f "$baseline" ]]; then
            awk -F'\t' 'NR == FNR { have[$1] = 1; next } !/^#/ && !($1 in have)' "$work/new-rows.tsv" "$baseline"
        fi
    } >"$tmp"
    cp "$tmp" "$baseline"
    say "wrote $baseline from $n run(s) of this build"
fi

((setup_error == 0)) || exit 2
((flags == 0)) || exit 1
exit 0
