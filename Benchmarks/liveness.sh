#!/usr/bin/env bash
# Liveness under load (issue 13): does `klaxon run` keep answering /healthz and /readyz while it works?
#
#   Benchmarks/liveness.sh                                  # builds the release klaxon, then runs
#   KLAXON=/path/to/klaxon Benchmarks/liveness.sh           # any binary (no build)
#   N=100000 KLAXON=… Benchmarks/liveness.sh                # a quick try: 100,000 readings, 2,000 alerts
#
# One daemon on its own database, one probe sending GET /healthz and GET /readyz at RATE requests/s
# each (a new connection per request) from start to end; each request counts in the phase in which
# it was sent:
#   (a) idle           IDLE seconds of nothing;
#   (b) ingest         a separate `klaxon ingest` loads N readings (N/PER_SERIES stations, PER_SERIES
#                      readings each, each station crossing a threshold once) into the daemon's database;
#   (c) evaluate       from the end of the ingest until the evaluator has worked through that backlog
#                      (one firing transition per station, one webhook each);
#   (d) dispatch       until a sink on 127.0.0.1 has answered all those webhooks;
#   (e) ingest+pushes  a second ingest of N readings (later times, still above the threshold: no
#                      transitions) while one-row pushes arrive at the API every PUSH_EVERY seconds;
#   (e′) its backlog   from the end of that ingest until the evaluator has caught up, pushes going on.
# Target in every phase: p99 ≤ 50 ms, max ≤ 250 ms, no request failed. A phase whose work did not
# finish (an ingest that failed, a backlog not worked through within PHASE_TIMEOUT) misses it too.
# The daemon's own minute tick may evaluate part of a batch while it is being ingested: it does
# so in production as well.
#
# Reported on stdout: a Markdown table (phase, seconds, endpoint, requests, failed, p50, p99, max,
# target met or missed) and notes: stalls (spans in which neither probe got an answer), ingest times,
# evaluator catch-up, webhooks by phase, push latency.
# Progress goes to stderr.
#
# Settings (environment): KLAXON (binary; default: build release into .build-release/), N=1000000
# (readings per ingest; a multiple of PER_SERIES), PER_SERIES=50, ORDER=time (readings listed time by
# time, as a feed sends them; `station`: station by station, a lighter ingest), RATE=20 (requests/s
# per endpoint), IDLE=10 (s), PUSH_EVERY=0.25 (s), PROBE_TIMEOUT=10 (s: a request unanswered by then
# failed), PHASE_TIMEOUT=180 (s: the longest (c), (d) or (e′) may take), WORK (where the work
# directory is made; default $TMPDIR or /tmp), KEEP=1 (keep the work directory: logs, data, raw
# probe rows).
# Exit status: 0 every phase met the target, 1 one missed it, 2 a setup error.
set -euo pipefail
# KLAXON and WORK may be relative to where this was started from.
[[ -n "${KLAXON:-}" && "$KLAXON" != /* && -e "$KLAXON" ]] && KLAXON="$PWD/$KLAXON"
[[ -n "${WORK:-}" && "$WORK" != /* ]] && WORK="$PWD/$WORK"
cd "$(dirname "$0")/.."

readings=${N:-1000000}
per_series=${PER_SERIES:-50}
order=${ORDER:-time}
rate=${RATE:-20}
idle=${IDLE:-10}
push_every=${PUSH_EVERY:-0.25}
probe_timeout=${PROBE_TIMEOUT:-10}
phase_timeout=${PHASE_TIMEOUT:-180}
python=${PYTHON:-/usr/bin/python3}
tools="$PWD/Benchmarks/liveness_tools.py"
started=$EPOCHREALTIME

(( per_series >= 2 && readings >= per_series && readings % per_series == 0 )) ||
    { echo "liveness.sh: N must be a multiple of PER_SERIES (at least 2)" >&2; exit 2; }
[[ "$order" == station || "$order" == time ]] || { echo "liveness.sh: ORDER is station or time" >&2; exit 2; }
series=$((readings / per_series))

if [[ -z "${KLAXON:-}" ]]; then
    # Build output goes to stderr: stdout holds only the report.
    swift build -c release --static-swift-stdlib --scratch-path .build-release --product klaxon >&2 ||
        { echo "liveness.sh: the release build failed" >&2; exit 2; }
    KLAXON=$PWD/.build-release/release/klaxon
fi
[[ -x "$KLAXON" ]] || { echo "liveness.sh: no executable klaxon at $KLAXON" >&2; exit 2; }

base=${WORK:-${TMPDIR:-/tmp}}
mkdir -p "$base"
work=$(mktemp -d "$base/klaxon-liveness.XXXXXX")
db=$work/klaxon.sqlite
# Every background child, so the trap can end them all; the daemon gets SIGTERM first.
daemon_pid=
children=()
cleanup() {
    local status=$?
    set +e
    if [[ -n "$daemon_pid" ]] && kill -TERM "$daemon_pid" 2>/dev/null; then
        # It exits within 19 s of SIGTERM by design; do not wait that long on an error path.
        for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$daemon_pid" 2>/dev/null
        wait "$daemon_pid" 2>/dev/null
    fi
    for pid in "${children[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
    if [[ "${KEEP:-0}" == 1 ]]; then echo "liveness.sh: kept $work" >&2; else rm -rf "$work"; fi
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say() { echo "liveness.sh: $*" >&2; }
fail() { say "$*"; exit 2; }
info() { printf '%s\t%s\n' "$1" "$2" >>"$work/info.tsv"; }
phase() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$work/phases.tsv"; }
# A failed ingest is a finding, not a setup error: the old daemon could hold the write lock longer
# than the ingest's 10 s busy timeout.
ingest() { # $1 file, $2 log, $3 phase
    "$klaxon" ingest --db "$db" "$1" >"$2" 2>&1 && return
    say "$3 the ingest failed: $(tail -n 1 "$2")"
    info incomplete "$3 the ingest failed: $(tail -n 1 "$2")"
}
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# A private copy: other builds may replace the binary while this runs.
cp "$KLAXON" "$work/klaxon"
klaxon=$work/klaxon
info klaxon "$KLAXON"
info started "$started"
info readings "$readings"
info series "$series"
info per_series "$per_series"
info order "$order"
info rate "$rate"
info push_every "$push_every"
info probe_timeout "$probe_timeout"

# Both batches before anything is measured: generating them is CPU the phases should not share.
say "generating 2 × $readings readings for $series stations"
# The first batch ends about a day ago and the second continues from there: plausible data times.
data_base=$(( ${EPOCHREALTIME%.*} / 900 * 900 - 86400 - per_series * 900 ))
"$python" "$tools" gen "$work/batch1.csv" "$series" "$per_series" 1 "$data_base" "$order"
"$python" "$tools" gen "$work/batch2.csv" "$series" "$per_series" 2 "$data_base" "$order"

"$python" "$tools" sink "$work/sink.port" "$work/sink.gate" "$work/sink.done" "$work/sink.log" "$series" &
children+=($!)
for _ in $(seq 100); do [[ -s "$work/sink.port" ]] && break; sleep 0.05; done
[[ -s "$work/sink.port" ]] || fail "the sink did not start"
sink_port=$(<"$work/sink.port")

mkdir -p "$work/rules"
cat >"$work/rules/liveness.yaml" <<'YAML'
name: liveness
kind: threshold
metric: level
above: 100
severity: warning
notify: [hook]
YAML
# One webhook per alert (group_by station, no group_wait). The long timeout lets the sink hold the
# sends the dispatcher starts before (d) without them failing (see `sink` in liveness_tools.py).
token=liveness-$$-$RANDOM
cat >"$work/klaxon.yaml" <<YAML
database: $db
rules: [$work/rules]
listen: 127.0.0.1:0
api: {token: $token}
receivers:
  - {name: hook, type: webhook, preset: generic, url: "http://127.0.0.1:$sink_port/hook", timeout: 10m}
routes:
  - {receivers: [hook], group_by: [station]}
YAML

"$klaxon" run --config "$work/klaxon.yaml" >"$work/daemon.out" 2>"$work/daemon.log" &
daemon_pid=$!
port=
for _ in $(seq 300); do
    port=$(sed -n 's/.*msg=listening address=127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$work/daemon.log")
    [[ -n "$port" ]] && break
    kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/daemon.log" >&2; fail "the daemon exited"; }
    sleep 0.1
done
[[ -n "$port" ]] || fail "the daemon did not say where it listens"
url=http://127.0.0.1:$port
say "daemon pid $daemon_pid on $url, sink on 127.0.0.1:$sink_port, work in $work"
sleep 1 # its first evaluation (of nothing) at start

"$python" "$tools" probe "$work/probe.csv" "$work/probe.stop" "$probe_timeout" \
    "$url/healthz@$rate" "$url/readyz@$rate" &
children+=($!)
probe_pid=$!
for _ in $(seq 100); do [[ -e "$work/probe.csv.started" ]] && break; sleep 0.05; done
[[ -e "$work/probe.csv.started" ]] || fail "the probe did not start"
sleep 0.5

# (a)
t=$EPOCHREALTIME
# In the background, so a signal is handled at once rather than after the sleep.
sleep "$idle" &
children+=($!)
wait $!
phase a "(a) idle" "$t" "$EPOCHREALTIME"

# (b)
say "(b) ingest of $readings readings"
t=$EPOCHREALTIME
ingest "$work/batch1.csv" "$work/ingest-b.log" "(b)"
t_end=$EPOCHREALTIME
phase b "(b) ingest" "$t" "$t_end"
info ingest_b_seconds "$(since "$t")"

# (c) Its start is the ingest's end: `settle` wakes the evaluator with a one-row push at once.
say "(c) evaluation (after $(since "$t") s of ingest)"
"$python" "$tools" settle "$work/settle-c.json" "$db" "$work/daemon.log" "$phase_timeout" \
    "$url/api/v1/readings" "$token" ||
    info incomplete "(c) the evaluator had not caught up after $phase_timeout s"
t=$EPOCHREALTIME
phase c "(c) evaluate" "$t_end" "$t"

# (d)
say "(d) dispatch (evaluation took $(since "$t_end") s)"
touch "$work/sink.gate"
deadline=$(( ${t%.*} + phase_timeout ))
until [[ -e "$work/sink.done" ]] || (( ${EPOCHREALTIME%.*} >= deadline )); do sleep 0.05; done
[[ -e "$work/sink.done" ]] || info incomplete "(d) the sink had not seen $series webhooks after $phase_timeout s"
phase d "(d) dispatch" "$t" "$EPOCHREALTIME"

# (e) and (e′)
say "(e) ingest with pushes every $push_every s (dispatch took $(since "$t") s)"
"$python" "$tools" push "$work/push.csv" "$work/push.stop" "$push_every" "$url/api/v1/readings" "$token" \
    LIVENESS-PUSH &
children+=($!)
push_pid=$!
t=$EPOCHREALTIME
ingest "$work/batch2.csv" "$work/ingest-e.log" "(e)"
t_end=$EPOCHREALTIME
phase e "(e) ingest + pushes" "$t" "$t_end"
info ingest_e_seconds "$(since "$t")"
say "(e′) its backlog, pushes going on (ingest took $(since "$t") s)"
"$python" "$tools" settle "$work/settle-e2.json" "$db" "$work/daemon.log" "$phase_timeout" ||
    info incomplete "(e′) the evaluator had not caught up after $phase_timeout s"
phase e2 "(e′) backlog + pushes" "$t_end" "$EPOCHREALTIME"
touch "$work/push.stop"
wait "$push_pid" || fail "the pusher failed"

touch "$work/probe.stop"
wait "$probe_pid" || fail "the probe failed"
kill -0 "$daemon_pid" 2>/dev/null || { tail -n 20 "$work/daemon.log" >&2; fail "the daemon died"; }
info finished "$EPOCHREALTIME"
"$python" "$tools" report "$work"
