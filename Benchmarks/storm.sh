#!/usr/bin/env bash
# A storm for one receiver (issue 41, "no storms"): does a receiver's `budget:` hold while
# `klaxon run` works through 100,000 transitions for it, and does the daemon stay live?
#
#   Benchmarks/storm.sh                               # builds the release klaxon, then runs
#   KLAXON=/path/to/klaxon Benchmarks/storm.sh        # any binary (no build)
#   STATIONS=500 KLAXON=… Benchmarks/storm.sh         # a quick try: 10,000 transitions
#
# One daemon on its own database, one Slack-like receiver (the `slack` preset's incoming webhook,
# which cannot edit) on a sink on 127.0.0.1 with `budget: {messages: BUDGET, per: PER}`, and one
# probe sending GET /healthz at RATE requests/s (a new connection per request) from start to end.
# `klaxon ingest` loads STATIONS stations × FLIPS readings that cross the threshold at every
# reading: STATIONS × FLIPS transitions (firings and resolves) for that one receiver (default 5,000
# × 20 = 100,000). The daemon evaluates and delivers them; the run ends once the outbox has nothing
# left to send (or after TIMEOUT seconds).
#
# Targets: the sink got at most BUDGET messages plus the summaries (one per window: the receiver
# cannot edit) plus the resolves owed to the alerts it heard; every other notification is `skipped`
# as folded in the outbox; /healthz p99 ≤ 50 ms and max ≤ 250 ms (Benchmarks/liveness.sh's bounds),
# no probe failed.
#
# Reported on stdout: one line per measure (tab-separated), then `target met` or `target missed`.
# Settings (environment): KLAXON, STATIONS=5000, FLIPS=20, BUDGET=20, PER=10m, RATE=20, TIMEOUT=900,
# WORK (where the work directory is made), KEEP=1 (keep it).
# Exit status: 0 targets met, 1 one missed, 2 a setup error.
set -euo pipefail
[[ -n "${KLAXON:-}" && "$KLAXON" != /* && -e "$KLAXON" ]] && KLAXON="$PWD/$KLAXON"
[[ -n "${WORK:-}" && "$WORK" != /* ]] && WORK="$PWD/$WORK"
cd "$(dirname "$0")/.."

stations=${STATIONS:-5000}
flips=${FLIPS:-20}
budget=${BUDGET:-20}
per=${PER:-10m}
rate=${RATE:-20}
timeout=${TIMEOUT:-900}
python=${PYTHON:-/usr/bin/python3}
tools="$PWD/Benchmarks/liveness_tools.py"

if [[ -z "${KLAXON:-}" ]]; then
    swift build -c release --static-swift-stdlib --scratch-path .build-release --product klaxon >&2 ||
        { echo "storm.sh: the release build failed" >&2; exit 2; }
    KLAXON=$PWD/.build-release/release/klaxon
fi
[[ -x "$KLAXON" ]] || { echo "storm.sh: no executable klaxon at $KLAXON" >&2; exit 2; }

base=${WORK:-${TMPDIR:-/tmp}}
mkdir -p "$base"
work=$(mktemp -d "$base/klaxon-storm.XXXXXX")
db=$work/klaxon.sqlite
daemon_pid=
children=()
cleanup() {
    local status=$?
    set +e
    if [[ -n "$daemon_pid" ]] && kill -TERM "$daemon_pid" 2>/dev/null; then
        for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$daemon_pid" 2>/dev/null
        wait "$daemon_pid" 2>/dev/null
    fi
    for pid in "${children[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
    if [[ "${KEEP:-0}" == 1 ]]; then echo "storm.sh: kept $work" >&2; else rm -rf "$work"; fi
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
say() { echo "storm.sh: $*" >&2; }
fail() { say "$*"; exit 2; }

cp "$KLAXON" "$work/klaxon"
klaxon=$work/klaxon

# Readings: each station alternates above and below the threshold, 15 minutes apart, ending about
# an hour ago above it: every reading is a transition (`notify_max_age: 0s` below: all of them are
# news), and each station ends firing. What one evaluation finds is told as the present (an alert's
# flips fold into its newest state), so the receiver is owed one firing per station: the storm of
# Uptime Kuma #4779, thousands of monitors at once.
"$python" - "$work/storm.csv" "$stations" "$flips" <<'PY'
import sys, time
path, stations, flips = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
end = int(time.time()) // 900 * 900 - 3600
with open(path, "w") as f:
    f.write("station,metric,time,value\n")
    for k in range(flips + 1):
        t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end - (flips - k) * 900))
        # The last reading is above: each station ends firing (a new alert for the receiver).
        v = 150 if (flips - k) % 2 == 0 else 50
        f.write("".join("S%05d,level,%s,%d\n" % (s, t, v) for s in range(stations)))
PY

# The sink: counts requests, and those that are the storm's summary.
"$python" - "$work/sink.port" "$work/sink.counts" <<'PY' &
import http.server, sys, threading
port_path, counts_path = sys.argv[1], sys.argv[2]
lock, counts = threading.Lock(), {"requests": 0, "summaries": 0}
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:
            counts["requests"] += 1
            counts["summaries"] += b"Storm summary" in body
            with open(counts_path, "w") as f:
                f.write("%d\t%d\n" % (counts["requests"], counts["summaries"]))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(port_path, "w").write(str(s.server_address[1]))
s.serve_forever()
PY
children+=($!)
for _ in $(seq 100); do [[ -s "$work/sink.port" ]] && break; sleep 0.05; done
[[ -s "$work/sink.port" ]] || fail "the sink did not start"
sink_port=$(<"$work/sink.port")

mkdir -p "$work/rules"
cat >"$work/rules/storm.yaml" <<'YAML'
name: storm
kind: threshold
metric: level
above: 100
severity: warning
notify: [chat]
YAML
cat >"$work/klaxon.yaml" <<YAML
database: $db
rules: [$work/rules]
listen: 127.0.0.1:0
# The readings are hours old: every transition is news here, not a catch-up.
notify_max_age: 0s
receivers:
  - name: chat
    type: webhook
    preset: slack
    url: "http://127.0.0.1:$sink_port/hook"
    budget: {messages: $budget, per: $per}
routes:
  - {receivers: [chat], group_by: [station], group_wait: 0s, group_interval: 1s}
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
"$python" "$tools" probe "$work/probe.csv" "$work/probe.stop" 10 "http://127.0.0.1:$port/healthz@$rate" &
children+=($!)
probe_pid=$!

say "ingesting $((stations * (flips + 1))) readings ($((stations * flips)) transitions for one receiver)"
"$klaxon" ingest --db "$db" "$work/storm.csv" >"$work/ingest.log" 2>&1 || fail "the ingest failed: $(tail -n 1 "$work/ingest.log")"
started=$EPOCHREALTIME

# Done once every transition is logged and the outbox has nothing left to send.
open_rows() {
    "$python" -c '
import sqlite3, sys
c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True, timeout=30)
t = c.execute("SELECT count(*) FROM transitions").fetchone()[0]
o = c.execute("SELECT count(*) FROM outbox WHERE state IN (\"pending\", \"sending\", \"held\")").fetchone()[0]
print(t, o)' "$db"
}
while :; do
    read -r logged left < <(open_rows)
    (( logged >= stations * flips && left == 0 )) && break
    awk -v a="$started" -v b="$EPOCHREALTIME" -v t="$timeout" 'BEGIN { exit !(b - a > t) }' &&
        { say "not done after $timeout s ($logged transitions, $left rows to send)"; break; }
    sleep 1
done
seconds=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
touch "$work/probe.stop"
wait "$probe_pid" || true

"$python" - "$db" "$work/sink.counts" "$work/probe.csv" "$budget" "$seconds" <<'PY'
import sqlite3, sys
db, counts, probe, budget, seconds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
c = sqlite3.connect(db)
transitions = c.execute("SELECT count(*) FROM transitions").fetchone()[0]
states = dict(c.execute("SELECT state, count(*) FROM outbox GROUP BY state").fetchall())
folded = c.execute("SELECT count(*) FROM outbox WHERE state = 'skipped' AND last_error LIKE 'folded into the storm summary%'").fetchone()[0]
resolves = c.execute("""SELECT count(*) FROM outbox o JOIN transitions t ON t.id = o.transition_id
    WHERE o.state = 'sent' AND t.state = 'resolved'""").fetchone()[0]
try:
    requests, summaries = map(int, open(counts).read().split())
except OSError:
    requests, summaries = 0, 0
lat, failed = [], 0
for line in open(probe).read().splitlines()[1:]:
    _, _, ms, status = line.split(",")
    if status != "200" or float(ms) < 0:
        failed += 1
    else:
        lat.append(float(ms))
lat.sort()
p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("inf")
rows = [("seconds", seconds), ("transitions", transitions), ("outbox", states), ("folded", folded),
        ("sink requests", requests), ("summaries", summaries), ("resolves sent", resolves),
        ("healthz requests", len(lat) + failed), ("healthz failed", failed),
        ("healthz p50 ms", p(0.5)), ("healthz p99 ms", p(0.99)), ("healthz max ms", lat[-1] if lat else None)]
for k, v in rows:
    print("%s\t%s" % (k, v))
ok = requests - summaries - resolves <= budget and failed == 0 and p(0.99) <= 50 and (lat[-1] if lat else 1e9) <= 250
print("target met" if ok else "target missed")
sys.exit(0 if ok else 1)
PY
