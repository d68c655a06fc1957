#!/usr/bin/env bash
# klaxon on PostgreSQL (issue 17): end to end with one and with two daemons, and ingest against
# `psql \copy`.
#
#   Benchmarks/postgres.sh                                      # builds the release klaxon, then runs
#   KLAXON=/path/to/klaxon Benchmarks/postgres.sh
#   N=500 M=50000 RUNS=1 KLAXON=… Benchmarks/postgres.sh        # a quick try
#   SKIP_INGEST=1 KLAXON=… Benchmarks/postgres.sh               # end to end only
#
# The server: a throw-away PostgreSQL of Debian's newest server binaries (/usr/lib/postgresql/*/bin),
# `initdb` into the work directory (as `nobody` when run as root: initdb refuses root), trust
# authentication, listening on a free port of 127.0.0.1, its Unix socket in the work directory too;
# stopped at exit. PostgreSQL's own defaults (fsync on, synchronous_commit on: every commit waits for
# its WAL flush) unless PG_OPTIONS says otherwise; the tests' settings, say, are
#   PG_OPTIONS="fsync=off synchronous_commit=off full_page_writes=off"
# Needs Debian's PostgreSQL and nginx (apt-get install postgresql nginx): without PostgreSQL nothing
# is measured (exit 2); without nginx only the ingest is (SKIP_E2E=1).
#
# End to end: the workload of Benchmarks/alertmanager.sh's "klaxon run": the daemon runs; `klaxon
# ingest` stores one reading for each of N (5,000) new stations, each above a threshold rule: one
# firing alert each, one generic webhook per alert, to nginx on 127.0.0.1 (`return 200`, every request
# logged with its time and Idempotency-Key). Time: from the start of `klaxon ingest` to the request
# that brought the Nth distinct key. Three ways, each on a new database:
#   SQLite           one daemon on a SQLite file (for reference)
#   PostgreSQL ×1    one daemon, `database: postgres://…`
#   PostgreSQL ×2    two daemons on the same database: one holds the evaluator duty, both dispatch
# After each run (once the requests stop for SETTLE s): requests, distinct keys, transitions recorded
# and, with two daemons, the requests each sent (nginx logs the client port, `ss` maps ports to
# daemons) and the evaluations each ran (klaxon_evaluations_total of its /metrics). Each alert should
# be one transition and one key: with two daemons, more means both recorded or sent the same alert.
#
# Ingest: M (1,000,000) readings as CSV (station,metric,time,value: STATIONS (1,000) stations ×
# M/STATIONS 15-minute readings, time by time), loaded by `klaxon ingest --db postgres://…` into a new
# database (its schema made by that command, so included) and by
#   psql -c "\copy plain FROM file WITH (FORMAT csv, HEADER true)"
# into `plain(station text, metric text, time timestamptz, value double precision)` in another new
# database, and into `keyed`, the same with klaxon's unique key (station, metric, time), in a third
# database (the table made before timing); and, for reference, `klaxon ingest` into a new SQLite file.
# Also timed: `klaxon ingest` of a header-only file into a new database (process, connection, schema:
# the fixed part of the first).
#
# The best of RUNS (3) is reported for each, and the ratios. Settings (environment): KLAXON (a built
# klaxon; otherwise `swift build -c release --static-swift-stdlib --scratch-path .build-release --product klaxon`),
# N=5000, M=1000000, STATIONS=1000, RUNS=3, SETTLE=2 (s without a new request before counting),
# TIMEOUT=180 (s: the longest a delivery may take before the run counts as failed), PG_OPTIONS,
# SKIP_E2E=1, SKIP_INGEST=1, KEEP=1 (keep the work directory: the cluster in pg/data, the databases
# not dropped).
# Exit status: 0 every run delivered N alerts, and with two daemons N transitions and N distinct keys;
# 1 a PostgreSQL run recorded or delivered some alert twice (a transition or a distinct key beyond
# N: an alert evaluated or sent under two keys, which the duties and the claims rule out);
# 2 a setup error, or a run that did not deliver N.
set -euo pipefail
[[ -n "${KLAXON:-}" && "$KLAXON" != /* && -e "$KLAXON" ]] && KLAXON="$PWD/$KLAXON"
cd "$(dirname "$0")/.."
. Benchmarks/lib/nginx.sh

n=${N:-5000}
m=${M:-1000000}
stations=${STATIONS:-1000}
runs=${RUNS:-3}
settle=${SETTLE:-2}
timeout=${TIMEOUT:-180}
pg_options=${PG_OPTIONS:-}
skip_e2e=${SKIP_E2E:-0}
skip_ingest=${SKIP_INGEST:-0}
python=${PYTHON:-/usr/bin/python3}
[[ -x "$python" ]] || python=$(command -v python3 || true)

say() { echo "postgres.sh: $*" >&2; }
fail() { say "$*"; exit 2; }

[[ -n "$python" ]] || fail "python3 is not installed"
pg_bin=
for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5n); do
    [[ -x "$dir/initdb" && -x "$dir/postgres" && -x "$dir/psql" ]] && pg_bin=$dir
done
[[ -n "$pg_bin" ]] || fail "PostgreSQL is not installed (apt-get install postgresql): nothing to measure"
nginx_bin=$(command -v nginx || ls /usr/sbin/nginx 2>/dev/null || true)
[[ "$skip_e2e" == 1 || -n "$nginx_bin" ]] || fail "nginx is not installed (apt-get install nginx): no end to end"
sqlite_bin=$(command -v sqlite3 || true)

if [[ -z "${KLAXON:-}" ]]; then
    swift build -c release --static-swift-stdlib --scratch-path .build-release --product klaxon >&2 || fail "the release build failed"
    KLAXON=$PWD/.build-release/release/klaxon
fi
[[ -x "$KLAXON" ]] || fail "no executable klaxon at $KLAXON"

work=$(mktemp -d "${TMPDIR:-/tmp}/klaxon-pg.XXXXXX")
children=()
pg_pid=
cleanup() {
    local status=$?
    set +e
    for pid in "${children[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${children[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [[ -n "$pg_pid" ]] && kill -0 "$pg_pid" 2>/dev/null; then
        kill -INT "$pg_pid" 2>/dev/null  # fast shutdown
        for _ in $(seq 300); do kill -0 "$pg_pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pg_pid" 2>/dev/null && kill -KILL "$pg_pid" 2>/dev/null
        wait "$pg_pid" 2>/dev/null
    fi
    [[ -f "$work/nginx/nginx.pid" ]] && kill -QUIT "$(<"$work/nginx/nginx.pid")" 2>/dev/null
    if [[ "${KEEP:-0}" == 1 ]]; then say "kept $work"; else rm -rf "$work"; fi
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cp "$KLAXON" "$work/klaxon"
klaxon=$work/klaxon


# --- PostgreSQL --------------------------------------------------------------------------------------
pg_user=klaxon
pg=$work/pg
mkdir -p "$pg/sock"
# initdb and postgres refuse root: as root, the cluster belongs to nobody (setpriv execs the program,
# so the pid we signal is postgres itself).
as_pg=()
if [[ $(id -u) == 0 ]]; then
    chmod 755 "$work"
    chown -R 65534:65534 "$pg"
    as_pg=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
fi
(cd "$pg" && LC_ALL=C "${as_pg[@]}" "$pg_bin/initdb" -D "$pg/data" -U "$pg_user" -A trust -E UTF8 --no-locale \
    --no-sync >"$pg/initdb.log" 2>&1) || fail "initdb failed: $(tail -n 5 "$pg/initdb.log")"
settings=(-c listen_addresses=127.0.0.1 -c "unix_socket_directories=$pg/sock" -c max_connections=100)
for o in $pg_options; do settings+=(-c "$o"); done
pg_port=
for attempt in 1 2 3 4 5; do
    port=$(free_port)
    (cd "$pg" && LC_ALL=C exec "${as_pg[@]}" "$pg_bin/postgres" -D "$pg/data" -p "$port" "${settings[@]}") \
        >"$pg/server-$attempt.log" 2>&1 &
    pg_pid=$!
    for _ in $(seq 600); do
        kill -0 "$pg_pid" 2>/dev/null || break
        if "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U "$pg_user" -d postgres; then pg_port=$port; break; fi
        sleep 0.05
    done
    [[ -n "$pg_port" ]] && break
    if kill -0 "$pg_pid" 2>/dev/null; then fail "postgres did not accept connections in 30 s: $(tail -n 5 "$pg/server-$attempt.log")"; fi
    wait "$pg_pid" 2>/dev/null || true
    pg_pid=
    grep -q "could not bind" "$pg/server-$attempt.log" || fail "postgres exited at startup: $(tail -n 5 "$pg/server-$attempt.log")"
done
[[ -n "$pg_port" ]] || fail "postgres found no free port"
pg_version=$("$pg_bin/postgres" --version | sed -n 's/.*(PostgreSQL) \([0-9.]*\).*/\1/p')
say "PostgreSQL $pg_version on 127.0.0.1:$pg_port (${pg_options:-defaults}), cluster in $pg/data"

# psql on database $1, the rest its arguments: unaligned, tuples only, stops at the first error.
pg_sql() {
    local db=$1
    shift
    PGOPTIONS="-c client_min_messages=warning" \
        "$pg_bin/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pg_port" -U "$pg_user" -d "$db" "$@"
}
pg_url() { echo "postgres://$pg_user@127.0.0.1:$pg_port/$1"; }
new_db() { pg_sql postgres -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1" >/dev/null; }
drop_db() { [[ "${KEEP:-0}" == 1 ]] || pg_sql postgres -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" >/dev/null; }

best() { sort -g | head -n 1; }
results=$work/results.tsv
: >"$results"
record() { printf '%s\t%s\n' "$1" "$2" >>"$results"; }
get() { awk -F'\t' -v k="$1" '$1 == k { print $2 }' "$results" | best; }
# All values of $1, in order, comma-separated (for counts that should be the same every run).
all() { awk -F'\t' -v k="$1" '$1 == k { printf "%s%s", (n++ ? ", " : ""), $2 }' "$results"; }
last() { awk -F'\t' -v k="$1" '$1 == k { v = $2 } END { print v }' "$results"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b; else print "-" }'; }
rate() { awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "-" }'; }
status=0

# --- End to end --------------------------------------------------------------------------------------
if [[ "$skip_e2e" != 1 ]]; then
    # nginx: one worker per core, every request logged as "<msec> <uri> <Idempotency-Key> <client port>".
    start_nginx '$msec $uri $http_idempotency_key $remote_port'

    log=$work/nginx/access.log
    # The requests logged for /NAME; the distinct keys among them; the time of the Kth distinct key.
    requests() { awk -v u="/$1" '$2 == u { n++ } END { print n + 0 }' "$log" 2>/dev/null || echo 0; }
    distinct() { awk -v u="/$1" '$2 == u && !seen[$3]++ { n++ } END { print n + 0 }' "$log" 2>/dev/null || echo 0; }
    nth_time() { awk -v u="/$1" -v k="$2" '$2 == u && !seen[$3]++ && ++n == k { print $1; exit }' "$log"; }
    # Waits until /NAME has seen N distinct keys (or TIMEOUT); prints the time of the Nth.
    wait_for() { # $1 name, $2 n
        local deadline=$((${EPOCHREALTIME%.*} + timeout))
        while (($(distinct "$1") < $2)); do
            ((${EPOCHREALTIME%.*} < deadline)) || { say "$1: only $(distinct "$1") of $2 after ${timeout}s"; return 1; }
            sleep 0.01
        done
        nth_time "$1" "$2"
    }
    # Waits until no request came to /NAME for SETTLE s (late duplicates), at most TIMEOUT.
    wait_quiet() {
        local last=-1 c still=0 deadline=$((${EPOCHREALTIME%.*} + timeout))
        while ((${EPOCHREALTIME%.*} < deadline)); do
            c=$(requests "$1")
            if ((c == last)); then ((still += 1)); else still=0; last=$c; fi
            ((still * 2 < settle * 10)) || return 0
            sleep 0.2
        done
    }

    # The data: N new stations, one reading each, above the threshold.
    "$python" - "$work" "$n" <<'PY'
import sys, time
work, n = sys.argv[1], int(sys.argv[2])
t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
with open(f"{work}/readings.csv", "w") as f:
    f.write("station,metric,time,value\n")
    f.write("".join(f"B{s:06d},level,{t},150.0\n" for s in range(n)))
PY
    mkdir -p "$work/rules"
    cat >"$work/rules/level.yaml" <<'YAML'
name: level-high
kind: threshold
metric: level
above: 100
severity: warning
notify: [hook]
YAML
    klaxon_config() { # $1 dir, $2 database, $3 path on the sink
        mkdir -p "$1"
        cat >"$1/klaxon.yaml" <<YAML
database: "$2"
rules: [$work/rules]
listen: 127.0.0.1:0
receivers:
  - {name: hook, type: webhook, preset: generic, url: "http://127.0.0.1:$nginx_port/$3", timeout: 10m}
routes:
  - {receivers: [hook], group_by: [station]}
YAML
    }

    # Starts `klaxon run` on $1/klaxon.yaml, its output in $1/daemon-$2.*; waits until it listens and
    # /readyz answers 200; appends its pid to daemon_pids and its URL to daemon_urls.
    daemon_pids=()
    daemon_urls=()
    start_daemon() { # $1 dir, $2 tag
        local out=$1/daemon-$2 pid port=
        "$klaxon" run --config "$1/klaxon.yaml" >"$out.out" 2>"$out.log" &
        pid=$!
        children+=($pid)
        daemon_pids+=($pid)
        for _ in $(seq 600); do
            # (The log may not exist yet: the shell opens it in the child.)
            port=$(sed -n 's/.*msg=listening address=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out.log" 2>/dev/null | head -n 1 || true)
            [[ -n "$port" ]] && break
            kill -0 "$pid" 2>/dev/null || { cat "$out.log" >&2; fail "the daemon exited"; }
            sleep 0.05
        done
        [[ -n "$port" ]] || fail "the daemon did not start: $(tail -n 3 "$out.log")"
        daemon_urls+=("http://127.0.0.1:$port")
        for _ in $(seq 200); do
            [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz") == 200 ]] && return 0
            sleep 0.05
        done
        say "warning: $out: /readyz did not answer 200 in 10 s: $(curl -s "http://127.0.0.1:$port/readyz" | head -c 300)"
    }
    stop_daemons() {
        local pid
        for pid in "${daemon_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
        for pid in "${daemon_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
        daemon_pids=()
        daemon_urls=()
    }
    # Evaluations a daemon ran (its own counter; the other klaxon_* totals are the store's).
    evaluations() { curl -s "$1/metrics" | awk '/^klaxon_evaluations_total/ { s += $NF } END { print s + 0 }'; }
    # Which daemon sent what: nginx logs the client port; `ss` every 0.2 s maps ports to processes
    # (klaxon keeps its connections open, so each is seen). Lines "port pid" in $1.
    watch_connections() {
        while :; do
            ss -tnpH state established "( dport = :$nginx_port )" 2>/dev/null |
                sed -n 's/.*127\.0\.0\.1:\([0-9]*\) *127\.0\.0\.1:[0-9]* *users:(("[^"]*",pid=\([0-9]*\),.*/\1 \2/p' >>"$1"
            sleep 0.2
        done
    }
    # Requests to /NAME by each of the pids given, then those of a port never seen: "a + b (+ c unknown)".
    by_daemon() { # $1 name, $2 connections file, then pids
        local name=$1 conns=$2
        shift 2
        awk -v u="/$name" -v pids="$*" '
            FILENAME == ARGV[1] { pid[$1] = $2; next }
            $2 == u { if ($4 in pid) n[pid[$4]]++; else unknown++ }
            END {
                k = split(pids, p, " ")
                for (i = 1; i <= k; i++) printf "%s%d", (i > 1 ? " + " : ""), n[p[i]]
                if (unknown) printf " (+ %d from unmapped connections)", unknown
            }' "$conns" "$log"
    }

    # One end-to-end run: $1 key (sqlite, pg1, pg2), $2 run, $3 daemons.
    e2e() {
        local key=$1 run=$2 daemons=$3 name=$1-$2 d=$work/e2e/$1-$2 db url t0 t_ingest end i
        mkdir -p "$d"
        if [[ $key == sqlite ]]; then
            url=$d/klaxon.sqlite
        else
            db=e2e_${key}_$run
            new_db "$db"
            url=$(pg_url "$db")
        fi
        klaxon_config "$d" "$url" "$name"
        for ((i = 1; i <= daemons; i++)); do start_daemon "$d" "$i"; done
        local watcher=
        if ((daemons > 1)); then
            : >"$d/connections"
            watch_connections "$d/connections" &
            watcher=$!
            children+=($watcher)
        fi
        sleep 0.5
        t0=$(now)
        "$klaxon" ingest --db "$url" "$work/readings.csv" >"$d/ingest.log" 2>&1 ||
            fail "klaxon ingest failed: $(tail -n 2 "$d/ingest.log")"
        t_ingest=$(now)
        end=$(wait_for "$name" "$n") || fail "$name: the daemon(s) did not deliver $n (see $d)"
        wait_quiet "$name"
        record "$key" "$(secs "$t0" "$end")"
        record "${key}_ingest" "$(secs "$t0" "$t_ingest")"
        record "${key}_requests" "$(requests "$name")"
        record "${key}_distinct" "$(distinct "$name")"
        local transitions outbox split="" evals=""
        if [[ -n "$watcher" ]]; then
            kill "$watcher" 2>/dev/null || true
            wait "$watcher" 2>/dev/null || true
        fi
        if [[ $key == sqlite ]]; then
            transitions=$([[ -n "$sqlite_bin" ]] && "$sqlite_bin" "$url" "SELECT count(*) FROM transitions" || echo -)
            outbox=$([[ -n "$sqlite_bin" ]] && "$sqlite_bin" "$url" "SELECT count(*) FROM outbox" || echo -)
        else
            transitions=$(pg_sql "$db" -c "SELECT count(*) FROM transitions")
            outbox=$(pg_sql "$db" -c "SELECT count(*) FROM outbox")
        fi
        record "${key}_transitions" "$transitions"
        record "${key}_outbox" "$outbox"
        if ((daemons > 1)); then
            for u in "${daemon_urls[@]}"; do evals+="${evals:+ + }$(evaluations "$u")"; done
            split=$(by_daemon "$name" "$d/connections" "${daemon_pids[@]}")
            record "${key}_split" "$split"
            record "${key}_evaluations" "$evals"
        fi
        stop_daemons
        [[ $key == sqlite ]] || drop_db "$db"
        say "run $run: $key: $(secs "$t0" "$end") s (ingest $(secs "$t0" "$t_ingest") s); requests $(requests "$name"), distinct keys $(distinct "$name"), transitions $transitions, outbox rows $outbox${split:+; requests sent by each daemon $split, evaluations run by each $evals}"
    }

    for ((run = 1; run <= runs; run++)); do
        e2e sqlite "$run" 1
        e2e pg1 "$run" 1
        e2e pg2 "$run" 2
    done
fi

# --- Ingest ------------------------------------------------------------------------------------------
if [[ "$skip_ingest" != 1 ]]; then
    csv=$work/ingest.csv
    say "generating $m readings ($stations stations × 15-minute readings) in $csv"
    "$python" - "$csv" "$m" "$stations" <<'PY'
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
    printf 'station,metric,time,value\n' >"$work/empty.csv"
    mkdir -p "$work/ingest"
    count_rows() { pg_sql "$1" -c "SELECT count(*) FROM $2"; }
    for ((run = 1; run <= runs; run++)); do
        # The fixed part: process, connection, schema.
        db=ingest_fixed_$run
        new_db "$db"
        t0=$(now)
        "$klaxon" ingest --db "$(pg_url "$db")" "$work/empty.csv" >"$work/ingest/fixed-$run.log" 2>&1 ||
            fail "klaxon ingest (empty) failed: $(tail -n 2 "$work/ingest/fixed-$run.log")"
        t1=$(now)
        record fixed "$(secs "$t0" "$t1")"
        drop_db "$db"

        # klaxon ingest into PostgreSQL.
        db=ingest_klaxon_$run
        new_db "$db"
        t0=$(now)
        "$klaxon" ingest --db "$(pg_url "$db")" "$csv" >"$work/ingest/klaxon-$run.log" 2>&1 ||
            fail "klaxon ingest failed: $(tail -n 2 "$work/ingest/klaxon-$run.log")"
        t1=$(now)
        got=$(count_rows "$db" readings)
        [[ "$got" == "$m" ]] || fail "klaxon ingest stored $got readings of $m"
        size=$(pg_sql "$db" -c "SELECT pg_database_size(current_database())")
        record klaxon_pg "$(secs "$t0" "$t1")"
        record klaxon_pg_size "$size"
        drop_db "$db"

        # psql \copy into a plain table.
        db=ingest_psql_$run
        new_db "$db"
        pg_sql "$db" -c "CREATE TABLE plain(station text, metric text, time timestamptz, value double precision)"
        t0=$(now)
        pg_sql "$db" -c "\\copy plain FROM '$csv' WITH (FORMAT csv, HEADER true)" >"$work/ingest/psql-$run.log" 2>&1 ||
            fail "psql \\copy failed: $(tail -n 2 "$work/ingest/psql-$run.log")"
        t1=$(now)
        got=$(count_rows "$db" plain)
        [[ "$got" == "$m" ]] || fail "psql \\copy stored $got rows of $m"
        record psql "$(secs "$t0" "$t1")"
        record psql_size "$(pg_sql "$db" -c "SELECT pg_database_size(current_database())")"
        drop_db "$db"

        # psql \copy into a table with klaxon's unique key (station, metric, time): the index
        # maintenance a store that keeps one reading per key cannot avoid.
        db=ingest_keyed_$run
        new_db "$db"
        pg_sql "$db" -c "CREATE TABLE keyed(station text, metric text, time timestamptz, value double precision, UNIQUE (station, metric, time))"
        t0=$(now)
        pg_sql "$db" -c "\\copy keyed FROM '$csv' WITH (FORMAT csv, HEADER true)" >"$work/ingest/keyed-$run.log" 2>&1 ||
            fail "psql \\copy (keyed) failed: $(tail -n 2 "$work/ingest/keyed-$run.log")"
        t1=$(now)
        got=$(count_rows "$db" keyed)
        [[ "$got" == "$m" ]] || fail "psql \\copy (keyed) stored $got rows of $m"
        record psql_keyed "$(secs "$t0" "$t1")"
        drop_db "$db"

        # klaxon ingest into SQLite, for reference.
        file=$work/ingest/sqlite-$run.sqlite
        t0=$(now)
        "$klaxon" ingest --db "$file" "$csv" >"$work/ingest/sqlite-$run.log" 2>&1 ||
            fail "klaxon ingest (SQLite) failed: $(tail -n 2 "$work/ingest/sqlite-$run.log")"
        t1=$(now)
        record klaxon_sqlite "$(secs "$t0" "$t1")"
        [[ "${KEEP:-0}" == 1 ]] || rm -f "$file" "$file-wal" "$file-shm"
        say "run $run: klaxon ingest → PostgreSQL $(last klaxon_pg) s (of which fixed $(last fixed) s), psql \\copy $(last psql) s (keyed $(last psql_keyed) s), klaxon ingest → SQLite $(last klaxon_sqlite) s"
    done
fi

# --- Summary -----------------------------------------------------------------------------------------
echo "# klaxon on PostgreSQL $pg_version (${pg_options:-the default settings}; best of $runs)"
if [[ "$skip_e2e" != 1 ]]; then
    sqlite=$(get sqlite)
    echo
    echo "## From reading to webhook: $n alerts, one webhook each, to nginx on 127.0.0.1"
    echo
    echo "| | seconds | alerts/s | vs SQLite | klaxon ingest (s) | requests | distinct keys | transitions |"
    echo "|---|---|---|---|---|---|---|---|"
    for key in sqlite pg1 pg2; do
        case $key in
            sqlite) label="SQLite, one daemon" ;;
            pg1) label="PostgreSQL, one daemon" ;;
            pg2) label="PostgreSQL, two daemons" ;;
        esac
        t=$(get $key)
        echo "| $label | $t | $(rate "$n" "$t") | $(ratio "$t" "$sqlite")× | $(get ${key}_ingest) | $(all ${key}_requests) | $(all ${key}_distinct) | $(all ${key}_transitions) |"
    done
    echo
    echo "Time: from the start of \`klaxon ingest\` to the request bringing the ${n}th distinct Idempotency-Key;"
    echo "\"vs SQLite\" above 1: slower than SQLite. Counts: each run's, after ${settle} s without a request."
    # Two daemons: every alert one transition, one key.
    for v in $(awk -F'\t' '$1 == "pg2_transitions" || $1 == "pg2_distinct" || $1 == "pg1_transitions" || $1 == "pg1_distinct" { print $2 }' "$results"); do
        [[ "$v" == "$n" ]] || status=1
    done
    echo "Two daemons, requests sent by each: $(all pg2_split); evaluations run by each: $(all pg2_evaluations)."
    ((status == 0)) || echo "Some alert was recorded or delivered twice: transitions or distinct keys differ from $n."
fi
if [[ "$skip_ingest" != 1 ]]; then
    k=$(get klaxon_pg)
    p=$(get psql)
    s=$(get klaxon_sqlite)
    mib() { awk -v b="$1" 'BEGIN { if (b != "") printf "%.0f MiB", b / 1048576; else print "-" }'; }
    echo
    echo "## Ingest: $m readings ($stations stations × $((m / stations)) 15-minute readings), one CSV"
    echo
    echo "| | seconds | readings/s | vs psql \\copy | database size |"
    echo "|---|---|---|---|---|"
    echo "| psql \\copy into a plain table (4 columns, no keys) | $p | $(rate "$m" "$p") | 1.00× | $(mib "$(get psql_size)") |"
    q=$(get psql_keyed)
    echo "| psql \\copy into a table with klaxon's unique key (station, metric, time) | $q | $(rate "$m" "$q") | $(ratio "$q" "$p")× | |"
    echo "| klaxon ingest → PostgreSQL (new database, schema included) | $k | $(rate "$m" "$k") | $(ratio "$k" "$p")× | $(mib "$(get klaxon_pg_size)") |"
    echo "| · of which process, connection and schema (an empty file) | $(get fixed) | | | |"
    echo "| klaxon ingest → SQLite (new file), for reference | $s | $(rate "$m" "$s") | $(ratio "$s" "$p")× | |"
    echo
    echo "klaxon ingest into PostgreSQL took $(ratio "$k" "$p") times as long as psql \\copy into a plain table,"
    echo "and $(ratio "$k" "$q") times as long as psql \\copy into a table with the same unique key."
fi
exit $status
