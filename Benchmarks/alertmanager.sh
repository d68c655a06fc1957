#!/usr/bin/env bash
# From reading to webhook, side by side with Alertmanager (issue 14).
#
#   Benchmarks/alertmanager.sh                       # builds the release klaxon, then runs
#   KLAXON=/path/to/klaxon Benchmarks/alertmanager.sh
#   N=1000 RUNS=1 KLAXON=… Benchmarks/alertmanager.sh  # a quick try
#
# The workload: N (5,000) alerts, one webhook each, to the same nginx on 127.0.0.1 (`return 200`,
# every request logged with its time).
#   Alertmanager   N alerts POSTed to /api/v2/alerts in BATCHES (10) batches; group_by ['...'],
#                  group_wait 0s. Time: from the first POST to the Nth request nginx logged.
#   klaxon run     the daemon runs (as Alertmanager does); `klaxon ingest` stores one reading for each
#                  of N new stations, each above a threshold: one firing alert each, routed one
#                  webhook per alert. Time: from the start of `klaxon ingest` to the Nth request.
#   one-shot       the same through the one-shot commands: `klaxon ingest`, `klaxon evaluate`,
#                  `klaxon dispatch --until-empty`, each timed (its process start included).
# Then the slow sink: the same N to a Python ThreadingHTTPServer that takes 20 ms per request. How
# many each delivered, and in what time (klaxon's expected time is N × 20 ms ÷ connections in
# flight; Alertmanager's notifier times out and gives up on some).
#
# Each run uses new databases and a new Alertmanager; the best of RUNS (3) is reported for each, and
# the ratio Alertmanager ÷ klaxon (above 1: klaxon was faster). Peers are not installed here:
#   apt-get install prometheus-alertmanager nginx
# Without nginx nothing is measured; without Alertmanager, klaxon alone is.
#
# Settings (environment): KLAXON, N=5000, BATCHES=10, RUNS=3, SLOW=1 (0 skips the slow sink),
# SLOW_MS=20, CONNECTIONS (klaxon's connections in flight per receiver; default: klaxon's own),
# TIMEOUT=120 (s: the longest a delivery may take before the run counts as failed), KEEP=1 (keep
# the work directory).
# Exit status: 0 klaxon was at least as fast as Alertmanager end to end (or Alertmanager is absent)
# and lost nothing to the slow sink; 1 otherwise; 2 a setup error.
set -euo pipefail
[[ -n "${KLAXON:-}" && "$KLAXON" != /* && -e "$KLAXON" ]] && KLAXON="$PWD/$KLAXON"
cd "$(dirname "$0")/.."
. Benchmarks/lib/nginx.sh

n=${N:-5000}
batches=${BATCHES:-10}
runs=${RUNS:-3}
slow=${SLOW:-1}
slow_ms=${SLOW_MS:-20}
timeout=${TIMEOUT:-120}
python=${PYTHON:-/usr/bin/python3}

say() { echo "alertmanager.sh: $*" >&2; }
fail() { say "$*"; exit 2; }

nginx_bin=$(command -v nginx || ls /usr/sbin/nginx 2>/dev/null || true)
am_bin=$(command -v prometheus-alertmanager || command -v alertmanager || true)
[[ -n "$nginx_bin" ]] || fail "nginx is not installed (apt-get install nginx): nothing to measure"
[[ -n "$am_bin" ]] || say "Alertmanager is not installed (apt-get install prometheus-alertmanager): measuring klaxon alone"

if [[ -z "${KLAXON:-}" ]]; then
    swift build -c release --static-swift-stdlib --scratch-path .build-release --product klaxon >&2 || fail "the release build failed"
    KLAXON=$PWD/.build-release/release/klaxon
fi
[[ -x "$KLAXON" ]] || fail "no executable klaxon at $KLAXON"

work=$(mktemp -d "${TMPDIR:-/tmp}/klaxon-am.XXXXXX")
children=()
cleanup() {
    local status=$?
    set +e
    for pid in "${children[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${children[@]}"; do wait "$pid" 2>/dev/null || true; done
    [[ -f "$work/nginx/nginx.pid" ]] && kill -QUIT "$(<"$work/nginx/nginx.pid")" 2>/dev/null
    if [[ "${KEEP:-0}" == 1 ]]; then say "kept $work"; else rm -rf "$work"; fi
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cp "$KLAXON" "$work/klaxon"
klaxon=$work/klaxon


# nginx: one worker per core, every request logged as "<msec> <uri>".
start_nginx '$msec $uri'

# The requests logged for /NAME: how many, and the time of the Nth.
count() { awk -v u="/$1" '$2 == u { n++ } END { print n + 0 }' "$work/nginx/access.log" 2>/dev/null || echo 0; }
nth_time() { awk -v u="/$1" -v k="$2" '$2 == u && ++n == k { print $1; exit }' "$work/nginx/access.log"; }
# Waits until the log NAME has N lines (or TIMEOUT); prints the Nth's time.
wait_for() { # $1 name, $2 n, $3 start
    local deadline=$((${EPOCHREALTIME%.*} + timeout))
    while (($(count "$1") < $2)); do
        ((${EPOCHREALTIME%.*} < deadline)) || { say "$1: only $(count "$1") of $2 after ${timeout}s"; return 1; }
        sleep 0.01
    done
    nth_time "$1" "$2"
}

# The data: N stations, one reading each, above the threshold. Alertmanager's alerts carry the same.
"$python" - "$work" "$n" "$batches" <<'PY'
import json, sys, time
work, n, batches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
with open(f"{work}/readings.csv", "w") as f:
    f.write("station,metric,time,value\n")
    f.write("".join(f"B{s:06d},level,{t},150.0\n" for s in range(n)))
per = (n + batches - 1) // batches
for b in range(batches):
    alerts = [{"labels": {"alertname": "level-high", "station": f"B{s:06d}", "metric": "level",
                          "severity": "warning"},
               "annotations": {"summary": f"level at B{s:06d} is 150 (above 100)"},
               "startsAt": t}
              for s in range(b * per, min(n, (b + 1) * per))]
    with open(f"{work}/alerts-{b}.json", "w") as f:
        json.dump(alerts, f)
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
connections=${CONNECTIONS:+, connections: $CONNECTIONS}
klaxon_config() { # $1 dir, $2 path on the sink, $3 port
    mkdir -p "$1"
    cat >"$1/klaxon.yaml" <<YAML
database: $1/klaxon.sqlite
rules: [$work/rules]
listen: 127.0.0.1:0
receivers:
  - {name: hook, type: webhook, preset: generic, url: "http://127.0.0.1:$3/$2", timeout: 10m$connections}
routes:
  - {receivers: [hook], group_by: [station]}
YAML
}

# Starts `klaxon run` on $1/klaxon.yaml; sets daemon_pid.
start_daemon() {
    "$klaxon" run --config "$1/klaxon.yaml" >"$1/daemon.out" 2>"$1/daemon.log" &
    daemon_pid=$!
    children+=($daemon_pid)
    for _ in $(seq 300); do
        grep -q 'msg=listening address=' "$1/daemon.log" && return 0
        kill -0 "$daemon_pid" 2>/dev/null || { cat "$1/daemon.log" >&2; fail "the daemon exited"; }
        sleep 0.05
    done
    fail "the daemon did not start"
}
stop_daemon() {
    kill -TERM "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
}

# Starts Alertmanager sending to http://127.0.0.1:$2/$3; sets am_pid and am_url.
start_am() { # $1 dir, $2 port, $3 path
    mkdir -p "$1/data"
    cat >"$1/am.yml" <<YAML
route:
  receiver: hook
  group_by: ['...']
  group_wait: 0s
  group_interval: 1m
  repeat_interval: 24h
receivers:
  - name: hook
    webhook_configs:
      - url: http://127.0.0.1:$2/$3
        send_resolved: false
YAML
    local port
    port=$(free_port)
    "$am_bin" --config.file="$1/am.yml" --storage.path="$1/data" --web.listen-address="127.0.0.1:$port" \
        --cluster.listen-address= --log.level=warn >"$1/am.log" 2>&1 &
    am_pid=$!
    children+=($am_pid)
    am_url=http://127.0.0.1:$port
    for _ in $(seq 200); do
        curl -sf -o /dev/null "$am_url/-/ready" && return 0
        sleep 0.05
    done
    cat "$1/am.log" >&2
    fail "Alertmanager did not start"
}
post_alerts() {
    for ((b = 0; b < batches; b++)); do
        curl -sf -o /dev/null -XPOST -H 'Content-Type: application/json' \
            --data-binary "@$work/alerts-$b.json" "$am_url/api/v2/alerts" || return 1
    done
}

best() { sort -g | head -n 1; }
results=$work/results.tsv
: >"$results"
record() { printf '%s\t%s\n' "$1" "$2" >>"$results"; }

for ((run = 1; run <= runs; run++)); do
    # Alertmanager.
    if [[ -n "$am_bin" ]]; then
        start_am "$work/am-$run" "$nginx_port" "am-$run"
        t0=$(now)
        post_alerts || fail "POST to Alertmanager failed"
        t_post=$(now)
        end=$(wait_for "am-$run" "$n" "$t0") || { kill "$am_pid"; fail "Alertmanager did not deliver $n"; }
        record am "$(secs "$t0" "$end")"
        record am_post "$(secs "$t0" "$t_post")"
        kill -TERM "$am_pid"
        wait "$am_pid" 2>/dev/null || true
        say "run $run: Alertmanager $(secs "$t0" "$end") s"
    fi

    # klaxon run.
    d=$work/daemon-$run
    klaxon_config "$d" "daemon-$run" "$nginx_port"
    start_daemon "$d"
    sleep 0.5
    t0=$(now)
    "$klaxon" ingest --db "$d/klaxon.sqlite" "$work/readings.csv" >"$d/ingest.log" 2>&1 ||
        fail "klaxon ingest failed: $(tail -n 2 "$d/ingest.log")"
    t_ingest=$(now)
    end=$(wait_for "daemon-$run" "$n" "$t0") || fail "klaxon run did not deliver $n"
    record daemon "$(secs "$t0" "$end")"
    record daemon_ingest "$(secs "$t0" "$t_ingest")"
    stop_daemon
    say "run $run: klaxon run $(secs "$t0" "$end") s"

    # One-shot commands.
    o=$work/oneshot-$run
    klaxon_config "$o" "oneshot-$run" "$nginx_port"
    t0=$(now)
    "$klaxon" ingest --db "$o/klaxon.sqlite" "$work/readings.csv" >"$o/ingest.log" 2>&1 ||
        fail "klaxon ingest failed: $(tail -n 2 "$o/ingest.log")"
    t1=$(now)
    "$klaxon" evaluate --config "$o/klaxon.yaml" >"$o/evaluate.log" 2>&1 ||
        fail "klaxon evaluate failed: $(tail -n 2 "$o/evaluate.log")"
    t2=$(now)
    "$klaxon" dispatch --config "$o/klaxon.yaml" --until-empty >"$o/dispatch.log" 2>&1 ||
        fail "klaxon dispatch failed: $(tail -n 2 "$o/dispatch.log")"
    t3=$(now)
    end=$(wait_for "oneshot-$run" "$n" "$t0") || fail "the one-shot commands did not deliver $n"
    record oneshot "$(secs "$t0" "$end")"
    record oneshot_ingest "$(secs "$t0" "$t1")"
    record oneshot_evaluate "$(secs "$t1" "$t2")"
    record oneshot_dispatch "$(secs "$t2" "$t3")"
    say "run $run: one-shot $(secs "$t0" "$end") s (ingest $(secs "$t0" "$t1"), evaluate $(secs "$t1" "$t2"), dispatch $(secs "$t2" "$t3"))"
done

get() { awk -F'\t' -v k="$1" '$1 == k { print $2 }' "$results" | best; }
am=$(get am)
daemon=$(get daemon)
oneshot=$(get oneshot)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
rate() { awk -v n="$n" -v s="$1" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "-" }'; }

echo "## From reading to webhook: $n alerts, one webhook each, to nginx on 127.0.0.1 (best of $runs)"
echo
echo "| | seconds | alerts/s | vs Alertmanager |"
echo "|---|---|---|---|"
status=0
if [[ -n "$am" ]]; then
    echo "| Alertmanager $("$am_bin" --version 2>&1 | sed -n 's/.*version \([0-9.]*\).*/\1/p' | head -n 1) (POST $batches batches → last request) | $am | $(rate "$am") | 1.00× |"
fi
echo "| klaxon run (klaxon ingest → last request) | $daemon | $(rate "$daemon") | ${am:+$(ratio "$am" "$daemon")×} |"
echo "| klaxon one-shot (ingest; evaluate; dispatch --until-empty) | $oneshot | $(rate "$oneshot") | ${am:+$(ratio "$am" "$oneshot")×} |"
echo "| · klaxon ingest | $(get oneshot_ingest) | $(rate "$(get oneshot_ingest)") | |"
echo "| · klaxon evaluate (transitions into the outbox) | $(get oneshot_evaluate) | $(rate "$(get oneshot_evaluate)") | |"
echo "| · klaxon dispatch --until-empty (webhooks) | $(get oneshot_dispatch) | $(rate "$(get oneshot_dispatch)") | |"
if [[ -n "$am" ]] && awk -v a="$am" -v d="$daemon" 'BEGIN { exit !(d > a) }'; then status=1; fi

if [[ "$slow" == 1 ]]; then
    # The slow sink: a thread per request, each answered after SLOW_MS.
    slow_port=$(free_port)
    "$python" - "$slow_port" "$slow_ms" "$work/slow" <<'PY' &
import http.server, os, sys, threading, time
port, delay, out = int(sys.argv[1]), float(sys.argv[2]) / 1000, sys.argv[3]
os.makedirs(out, exist_ok=True)
lock = threading.Lock()
files = {}
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        time.sleep(delay)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
        with lock:
            f = files.setdefault(self.path, open(os.path.join(out, self.path.strip("/") + ".log"), "a", buffering=1))
            f.write("%.3f %s\n" % (time.time(), self.path))
    def log_message(self, *a): pass
class S(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024
S(("127.0.0.1", port), H).serve_forever()
PY
    children+=($!)
    for _ in $(seq 100); do
        curl -s -o /dev/null -XPOST "http://127.0.0.1:$slow_port/ping" && break
        sleep 0.05
    done
    slow_count() { [[ -f "$work/slow/$1.log" ]] && wc -l <"$work/slow/$1.log" || echo 0; }
    # Waits until $1 has N lines or nothing new came for 30 s; prints "count seconds".
    slow_wait() { # $1 name, $2 start
        local last=-1 still=0 c
        while :; do
            c=$(slow_count "$1")
            ((c >= n)) && break
            if ((c == last)); then ((still += 1)); else still=0; last=$c; fi
            ((still < 300)) || break
            sleep 0.1
        done
        local end
        end=$(sed -n "${c}p" "$work/slow/$1.log" | cut -d' ' -f1)
        echo "$c $(secs "$2" "${end:-$2}")"
    }
    echo
    echo "## The same $n to a slow sink ($slow_ms ms a request, Python ThreadingHTTPServer)"
    echo
    echo "| | delivered | seconds |"
    echo "|---|---|---|"
    if [[ -n "$am_bin" ]]; then
        start_am "$work/am-slow" "$slow_port" "am-slow"
        t0=$(now)
        post_alerts || fail "POST to Alertmanager failed"
        read -r c s < <(slow_wait am-slow "$t0")
        kill -TERM "$am_pid"
        wait "$am_pid" 2>/dev/null || true
        echo "| Alertmanager | $c of $n | $s |"
    fi
    d=$work/daemon-slow
    klaxon_config "$d" "daemon-slow" "$slow_port"
    start_daemon "$d"
    sleep 0.5
    t0=$(now)
    "$klaxon" ingest --db "$d/klaxon.sqlite" "$work/readings.csv" >"$d/ingest.log" 2>&1 || fail "klaxon ingest failed"
    read -r c s < <(slow_wait daemon-slow "$t0")
    stop_daemon
    echo "| klaxon run | $c of $n | $s |"
    ((c >= n)) || status=1
fi
exit $status
