#!/usr/bin/env bash
# Daemon memory (issue 14): `klaxon run` with STATIONS gauges (1,000), 10 rules and a day of
# 15-minute readings (96 per gauge), loaded by `klaxon ingest` while it runs and evaluated by it.
# Reports the daemon's resident memory once it has worked through the day and delivered what fired
# (VmRSS), and its peak (VmHWM). Target: ≤ 64 MiB.
#
#   Benchmarks/daemon-memory.sh                      # builds the release klaxon, then runs
#   KLAXON=/path/to/klaxon Benchmarks/daemon-memory.sh
#
# Exit status: 0 the peak was within the target, 1 not, 2 a setup error.
set -euo pipefail
[[ -n "${KLAXON:-}" && "$KLAXON" != /* && -e "$KLAXON" ]] && KLAXON="$PWD/$KLAXON"
cd "$(dirname "$0")/.."
stations=${STATIONS:-1000}
target_mib=${TARGET_MIB:-64}
python=${PYTHON:-/usr/bin/python3}
say() { echo "daemon-memory.sh: $*" >&2; }
fail() { say "$*"; exit 2; }

if [[ -z "${KLAXON:-}" ]]; then
    swift build -c release --static-swift-stdlib --scratch-path .build-release --product klaxon >&2 || fail "the release build failed"
    KLAXON=$PWD/.build-release/release/klaxon
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/klaxon-mem.XXXXXX")
pids=()
cleanup() {
    local status=$?
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; done
    [[ "${KEEP:-0}" == 1 ]] && say "kept $work" || rm -rf "$work"
    exit $status
}
trap cleanup EXIT

# A sink that answers every webhook at once.
port_file=$work/sink.port
"$python" - "$port_file" <<'PY' &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
pids+=($!)
for _ in $(seq 100); do [[ -s "$port_file" ]] && break; sleep 0.05; done
sink=$(<"$port_file")

# A day of readings ending now; levels wander, so some rules fire and resolve.
"$python" - "$work/day.csv" "$stations" <<'PY'
import math, sys, time
path, n = sys.argv[1], int(sys.argv[2])
end = int(time.time()) // 900 * 900
with open(path, "w") as f:
    f.write("station,metric,time,value\n")
    for k in range(96):
        t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end - (95 - k) * 900))
        f.write("".join(f"M{s:05d},level,{t},{10 + 6 * math.sin((k + s) / 9):.2f}\n" for s in range(n)))
PY

mkdir -p "$work/rules"
for i in 0 1 2 3 4 5 6 7; do
    cat >"$work/rules/above-$i.yaml" <<YAML
name: above-$i
kind: threshold
metric: level
above: $((8 + i))
for: 30m
severity: warning
notify: [hook]
YAML
done
cat >"$work/rules/rising.yaml" <<'YAML'
name: rising
kind: rate
metric: level
rising: 2
window: 1h
severity: info
notify: [hook]
YAML
cat >"$work/rules/quiet.yaml" <<'YAML'
name: quiet
kind: stale
metric: level
after: 2h
severity: warning
notify: [hook]
YAML
cat >"$work/klaxon.yaml" <<YAML
database: $work/klaxon.sqlite
rules: [$work/rules]
listen: 127.0.0.1:0
receivers:
  - {name: hook, type: webhook, preset: generic, url: "http://127.0.0.1:$sink/hook"}
routes:
  - {receivers: [hook], group_by: [rule, station]}
YAML
"$KLAXON" check --config "$work/klaxon.yaml" >&2 || fail "the rules or config do not check"

"$KLAXON" run --config "$work/klaxon.yaml" >"$work/daemon.out" 2>"$work/daemon.log" &
daemon=$!
pids+=($daemon)
for _ in $(seq 200); do grep -q 'msg=listening address=' "$work/daemon.log" && break; sleep 0.05; done
grep -q 'msg=listening address=' "$work/daemon.log" || fail "the daemon did not start"
"$KLAXON" ingest --db "$work/klaxon.sqlite" "$work/day.csv" >&2

# Settled: the evaluator has seen everything and the outbox is empty.
settled=
for _ in $(seq 600); do
    left=$(sqlite3 "$work/klaxon.sqlite" \
        "SELECT (SELECT count(*) FROM outbox WHERE state IN ('pending','sending')) +
                (SELECT coalesce(max(seq),0) FROM ingest_log) -
                (SELECT coalesce(max(CAST(value AS INTEGER)),0) FROM meta WHERE key = 'evaluated_log_seq')" 2>/dev/null || echo 1)
    [[ "$left" == 0 ]] && { settled=1; break; }
    sleep 0.2
done
[[ -n "$settled" ]] || fail "the daemon did not work through the day within 2 minutes"
sleep 2
rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$daemon/status")
anon=$(awk '/^RssAnon/ { print $2 }' "/proc/$daemon/status")
file=$(awk '/^RssFile/ { print $2 }' "/proc/$daemon/status")
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$daemon/status")
sent=$(sqlite3 "$work/klaxon.sqlite" "SELECT count(*) FROM outbox WHERE state = 'sent'")
transitions=$(sqlite3 "$work/klaxon.sqlite" "SELECT count(*) FROM transitions")
readings=$(sqlite3 "$work/klaxon.sqlite" "SELECT count(*) FROM readings")
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
echo "| daemon memory | $stations gauges, 10 rules, a day of readings ($readings), $transitions transitions, $sent webhooks | RSS $(mib "$rss") MiB settled ($(mib "$anon") MiB heap, $(mib "$file") MiB code and libraries), $(mib "$hwm") MiB peak | ≤ $target_mib MiB |"
awk -v h="$hwm" -v t="$target_mib" 'BEGIN { exit !(h <= t * 1024) }'
