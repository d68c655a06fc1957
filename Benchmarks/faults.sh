#!/usr/bin/env bash
# Crash test of delivery: kill -9 the daemon at random points, 20 times, during a 1,000-alert burst.
#
#   Benchmarks/faults.sh                               # builds the release klaxon, then runs
#   KLAXON=.build/debug/klaxon Benchmarks/faults.sh    # any binary (no build)
#
# 1,000 readings for 1,000 stations above a threshold are ingested before the first start, so the
# first daemon evaluates and queues 1,000 transitions, one webhook each (group_by: [station], no
# group_wait), to a sink on 127.0.0.1 that answers 200 after SINK_DELAY_MS. Then ROUNDS times:
# `klaxon run` in the background, a random KILL_MIN..KILL_MAX seconds, kill -9, a look at the outbox
# (read-only). A last start runs until every station has been delivered (or FINAL_TIMEOUT s), then
# gets SIGTERM.
#
# Reported on stdout: stations delivered, lost (must be 0), requests, duplicates under the same key
# (allowed: at-least-once), stations delivered under two different keys (must be 0), where the kills
# landed (and after how many the outbox had recorded no progress), the delay from each restart that
# still had work to the first request the sink got after it (max and median), how soon the claims a
# killed process left were sent again (at once, not after the 30 s lease), how long stations waited
# for their first delivery, and the wall time. Progress, one line per kill, goes to stderr.
#
# Settings (environment): KLAXON (binary; default: build release and use .build/release/klaxon),
# ALERTS=1000, ROUNDS=20, KILL_MIN=0.2, KILL_MAX=2.0 (s), SINK_DELAY_MS=20, FINAL_TIMEOUT=120 (s),
# SEED (for the kill times; default: random, printed), KEEP=1 (keep the work directory).
# Exit status: 0 nothing lost and no station under two keys, 1 otherwise, 2 a setup error.
set -euo pipefail
# KLAXON may be relative to where this was started from.
[[ -n "${KLAXON:-}" && "$KLAXON" != /* && -e "$KLAXON" ]] && KLAXON="$PWD/$KLAXON"
cd "$(dirname "$0")/.."

alerts=${ALERTS:-1000}
rounds=${ROUNDS:-20}
kill_min=${KILL_MIN:-0.2}
kill_max=${KILL_MAX:-2.0}
sink_delay_ms=${SINK_DELAY_MS:-20}
final_timeout=${FINAL_TIMEOUT:-120}
seed=${SEED:-$(( $(date +%s%N) % 1000000 ))}
python=${PYTHON:-/usr/bin/python3}

if [[ -z "${KLAXON:-}" ]]; then
    # Build output goes to stderr: stdout holds only the report.
    swift build -c release --static-swift-stdlib --scratch-path .build-release --product klaxon >&2 ||
        { echo "faults.sh: the release build failed" >&2; exit 2; }
    KLAXON=.build-release/release/klaxon
fi
[[ -x "$KLAXON" ]] || { echo "faults.sh: no executable klaxon at $KLAXON" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/klaxon-faults.XXXXXX")
sink_pid=
daemon_pid=
cleanup() {
    local status=$?
    set +e
    [[ -n "$daemon_pid" ]] && kill -9 "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
    [[ -n "$sink_pid" ]] && kill "$sink_pid" 2>/dev/null && wait "$sink_pid" 2>/dev/null
    if [[ "${KEEP:-0}" == 1 ]]; then echo "faults.sh: kept $work" >&2; else rm -rf "$work"; fi
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A private copy: other builds may replace the binary in .build while this runs.
cp "$KLAXON" "$work/klaxon"
klaxon="$work/klaxon"

cat >"$work/faults.py" <<'PY'
"""The sink, the outbox snapshot taken after each kill, and the analysis."""
import json, sqlite3, statistics, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def sink(log_path, port_path, delay_ms):
    """Answers 200 after delay_ms; logs `time key stations` per request, at receipt."""
    delay = float(delay_ms) / 1000
    out = open(log_path, "a", buffering=1)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes: with Nagle's algorithm and delayed ACKs, each
        # response would wait ~40 ms for the ACK of the first.
        disable_nagle_algorithm = True

        def body(self):
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                data = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return data
                    data += self.rfile.read(size)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_POST(self):
            body = self.body()
            t = time.time()
            key = self.headers.get("Idempotency-Key") or "-"
            try:
                stations = [a["labels"]["station"] for a in json.loads(body)["alerts"]]
            except Exception:
                stations = []
            with lock:
                out.write("%.6f %s %s\n" % (t, key, ",".join(stations) or "-"))
            time.sleep(delay)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
                super().handle_error(request, client_address)  # a killed daemon resets its connections

    server = Server(("127.0.0.1", 0), Handler)
    with open(port_path + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(port_path + ".tmp", port_path)
    server.serve_forever()


def outbox(db_path):
    """The outbox as the killed process left it: counts by state, and the claims still held."""
    try:
        db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True, timeout=10)
        states = dict(db.execute("SELECT state, count(*) FROM outbox GROUP BY state").fetchall())
        held = [r[0] for r in db.execute("SELECT DISTINCT batch FROM outbox WHERE state = 'sending'")]
        transitions = db.execute("SELECT count(*) FROM transitions").fetchone()[0]
        db.close()
        return {"states": states, "held": held, "transitions": transitions}
    except sqlite3.Error as e:  # before the first evaluation there may be no outbox yet
        return {"states": {}, "held": [], "transitions": 0, "error": str(e)}


def snapshot(db_path, rounds_path, log_path, round_no, pid, start, killed):
    s = outbox(db_path)
    s.update({"round": int(round_no), "pid": int(pid), "start": float(start), "end": float(killed)})
    with open(rounds_path, "a") as f:
        f.write(json.dumps(s) + "\n")
    st = s["states"]
    with open(log_path) as f:
        got = sum(1 for line in f if s["start"] <= float(line.split()[0]) <= s["end"])
    print(
        "round %2d: killed after %.2f s, %d requests; transitions %d; outbox sent %d, pending %d, sending %d"
        % (s["round"], s["end"] - s["start"], got, s["transitions"], st.get("sent", 0), st.get("pending", 0),
           st.get("sending", 0)),
        file=sys.stderr)


def delivered(log_path):
    """How many distinct stations the sink has seen."""
    seen = set()
    with open(log_path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] != "-":
                seen.update(parts[2].split(","))
    return len(seen)


def drained(db_path):
    """Exit 0 when the outbox holds nothing pending or being sent."""
    st = outbox(db_path)["states"]
    sys.exit(0 if st and st.get("pending", 0) + st.get("sending", 0) == 0 else 1)


def analyse(log_path, rounds_path, db_path, alerts, t0, t_end):
    alerts, t0, t_end = int(alerts), float(t0), float(t_end)
    expected = {"F%04d" % i for i in range(1, alerts + 1)}
    reqs = []
    with open(log_path) as f:
        for line in f:
            t, key, st = line.split()
            reqs.append((float(t), key, [] if st == "-" else st.split(",")))
    reqs.sort()
    runs = [json.loads(l) for l in open(rounds_path)]
    problems = []

    first = {}  # station -> first delivery time
    keys_of = {}  # station -> {key: [times]}
    stations_of = {}  # key -> stations
    for t, key, sts in reqs:
        stations_of.setdefault(key, set()).update(sts)
        for s in sts:
            first.setdefault(s, t)
            keys_of.setdefault(s, {}).setdefault(key, []).append(t)
    got = expected & set(first)
    lost = sorted(expected - got)
    extra = sorted(set(first) - expected)
    by_key = {}
    for t, key, _ in reqs:
        by_key.setdefault(key, []).append(t)
    dups = sum(len(v) - 1 for v in by_key.values())
    dup_keys = sum(1 for v in by_key.values() if len(v) > 1)
    split = {s: ks for s, ks in keys_of.items() if len(ks) > 1}
    mixed = {k: s for k, s in stations_of.items() if len(s) > 1}

    fmt = lambda x: "%.0f ms" % (x * 1000) if x < 10 else "%.1f s" % x
    print("stations delivered: %d / %d" % (len(got), alerts))
    print("lost: %d%s" % (len(lost), " (%s%s)" % (" ".join(lost[:20]), " …" if len(lost) > 20 else "") if lost else ""))
    print("requests: %d" % len(reqs))
    print("duplicates under the same key: %d (%d keys sent more than once)" % (dups, dup_keys))
    print("stations delivered under two different keys: %d" % len(split))
    for s in sorted(split)[:10]:
        print("  %s: %s" % (s, "; ".join("%s at %s" % (k, ", ".join("%.3f" % x for x in ts))
                                         for k, ts in sorted(split[s].items(), key=lambda kv: kv[1][0]))))
    if mixed:
        print("keys carrying more than one station: %d (e.g. %s)" % (len(mixed), next(iter(mixed.items()))))
    if extra:
        print("unexpected stations: %d (e.g. %s)" % (len(extra), extra[:5]))

    # Where the kills landed: before the evaluation's transaction committed, while stations were
    # still undelivered, or after the sink had seen every station. A kill during delivery after which
    # the outbox had recorded no more sent rows than at the kill before was a round without progress.
    phases = {"evaluating": 0, "delivering": 0, "idle": 0}
    stalled, sent_before = 0, 0
    for run in runs[:-1]:
        done = sum(1 for st in expected if first.get(st, float("inf")) < run["end"])
        phase = "evaluating" if run["transitions"] == 0 else "delivering" if done < alerts else "idle"
        phases[phase] += 1
        sent = run["states"].get("sent", 0)
        if phase == "delivering" and sent <= sent_before:
            stalled += 1
        sent_before = sent
    print("kills: %d before the evaluation committed, %d during delivery (%d of them with no sent row recorded "
          "since the kill before), %d after everything was delivered"
          % (phases["evaluating"], phases["delivering"], stalled, phases["idle"]))

    # Each restart (every start but the first) that still had undelivered stations: the time from the
    # restart to the first request the sink got after it, if it came before that process was killed.
    # And the claims the killed process left (rows still `sending`): a restart on the same host should
    # take them back at once, not after their 30 s lease: the first resend of one of them after the
    # restart, and the time until all of them had been resent (if this process lived that long).
    delays, censored, firsts, alls, unsent = [], [], [], [], []
    for prev, run in zip(runs, runs[1:]):
        s, e = run["start"], run["end"]
        done = sum(1 for st in expected if first.get(st, float("inf")) < s)
        if done < alerts:
            after = next((t for t, _, _ in reqs if t >= s), None)
            if after is not None and after <= e:
                delays.append((after - s, run["round"]))
            else:
                censored.append((e - s, run["round"]))
        if prev["held"]:
            again = [next((t for t in by_key.get(k, []) if t >= s), None) for k in prev["held"]]
            within = [t for t in again if t is not None and t <= e]
            if within:
                firsts.append((min(within) - s, run["round"]))
            else:
                unsent.append((e - s, run["round"]))
            if len(within) == len(again):
                alls.append((max(within) - s, run["round"], len(again)))
    if delays:
        worst = max(delays)
        print("delay after a restart to the first request: max %s (round %d), median %s, over %d restarts with work"
              % (fmt(worst[0]), worst[1], fmt(statistics.median(d for d, _ in delays)), len(delays)))
    else:
        print("delay after a restart to the first request: no restart had work left")
    if censored:
        print("  restarts killed before their first request: %d (lived %s)"
              % (len(censored), ", ".join("%s (round %d)" % (fmt(d), r) for d, r in censored)))
    if firsts or unsent:
        line = "claims left by a killed process: after %d restarts" % (len(firsts) + len(unsent))
        if firsts:
            worst = max(firsts)
            line += ", the first resent within %s of the restart (max; round %d; median %s)" % (
                fmt(worst[0]), worst[1], fmt(statistics.median(d for d, _ in firsts)))
            if worst[0] > 10:
                problems.append("claims of a killed process waited %s after the restart" % fmt(worst[0]))
        if alls:
            worst = max(alls)
            line += "; all %d resent within %s (max; round %d)" % (worst[2], fmt(worst[0]), worst[1])
        print(line)
        if unsent:
            print("  restarts killed before resending any of them: %d (lived %s)"
                  % (len(unsent), ", ".join("%s (round %d)" % (fmt(d), r) for d, r in unsent)))
    last = max((first[s] for s in got), default=t0)
    if got:
        lat = sorted(first[s] - t0 for s in got)
        print("first delivery of a station after the first start: median %.1f s, max %.1f s"
              % (statistics.median(lat), lat[-1]))
    print("wall time: %.1f s from the first start to the last station delivered; %.1f s to the final stop"
          % (last - t0, t_end - t0))
    final = outbox(db_path)
    print("outbox after the final stop: %s" % (", ".join("%s %d" % kv for kv in sorted(final["states"].items()))
                                               or final.get("error", "empty")))
    if set(final["states"]) - {"sent"}:
        problems.append("outbox rows left unsent after the final stop")

    ok = not lost and not split
    if lost:
        problems.append("%d stations lost" % len(lost))
    if split:
        problems.append("%d stations delivered under two keys" % len(split))
    print("summary: kill -9 x%d during a %d-alert burst: lost %d, duplicated %d (same key), %d under two keys, "
          "max delay after a restart %s, wall %.1f s: %s%s"
          % (len(runs) - 1, alerts, len(lost), dups, len(split), fmt(max(delays)[0]) if delays else "n/a",
             last - t0, "PASS" if ok else "FAIL", "" if not problems else " (" + "; ".join(problems) + ")"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    {"sink": sink, "snapshot": snapshot, "delivered": lambda p: print(delivered(p)), "drained": drained,
     "analyse": analyse}[sys.argv[1]](*sys.argv[2:])
PY

# The sink.
"$python" "$work/faults.py" sink "$work/sink.log" "$work/sink.port" "$sink_delay_ms" &
sink_pid=$!
for _ in $(seq 100); do [[ -s "$work/sink.port" ]] && break; sleep 0.05; done
[[ -s "$work/sink.port" ]] || { echo "faults.sh: the sink did not start" >&2; exit 2; }
port=$(<"$work/sink.port")
touch "$work/sink.log"

# Config and rule: one webhook per alert (group_by station, no group_wait).
mkdir -p "$work/rules"
cat >"$work/rules/burst.yaml" <<'YAML'
name: burst
kind: threshold
metric: gage_height
above: 100
severity: warning
notify: [hook]
YAML
cat >"$work/klaxon.yaml" <<YAML
database: $work/klaxon.sqlite
rules: [$work/rules]
listen: 127.0.0.1:0
api: {token: faults-$seed}
receivers:
  - {name: hook, type: webhook, preset: generic, url: "http://127.0.0.1:$port/hook"}
routes:
  - {receivers: [hook], group_by: [station]}
YAML

# The burst: one reading above the threshold for each of $alerts stations.
{
    echo "station,metric,time,value"
    for ((i = 1; i <= alerts; i++)); do printf 'F%04d,gage_height,2026-11-24T00:00:00Z,%d\n' "$i" $((150 + i % 50)); done
} >"$work/burst.csv"
"$klaxon" ingest --db "$work/klaxon.sqlite" "$work/burst.csv" >"$work/ingest.log" 2>&1 ||
    { echo "faults.sh: ingest failed:" >&2; cat "$work/ingest.log" >&2; exit 2; }

echo "faults.sh: $KLAXON, $alerts alerts, $rounds kills after ${kill_min}-${kill_max} s, sink ${sink_delay_ms} ms, seed $seed" >&2
RANDOM=$seed
min_ms=$(awk -v s="$kill_min" 'BEGIN { printf "%d", s * 1000 }')
max_ms=$(awk -v s="$kill_max" 'BEGIN { printf "%d", s * 1000 }')

start_daemon() { # $1: round; sets daemon_pid and started
    started=$EPOCHREALTIME
    "$klaxon" run --config "$work/klaxon.yaml" >/dev/null 2>"$work/daemon-$1.log" &
    daemon_pid=$!
}

t0=
for ((r = 1; r <= rounds; r++)); do
    start_daemon "$r" 2>/dev/null # bash's "Killed" notice of the last round's daemon comes here
    [[ -n "$t0" ]] || t0=$started
    ms=$((min_ms + (RANDOM * 32768 + RANDOM) % (max_ms - min_ms + 1)))
    sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
    if ! kill -0 "$daemon_pid" 2>/dev/null; then
        echo "faults.sh: round $r: the daemon exited by itself:" >&2
        cat "$work/daemon-$r.log" >&2
        exit 2
    fi
    kill -9 "$daemon_pid" 2>/dev/null || true
    killed=$EPOCHREALTIME
    # Reaped before the restart: a zombie's /proc entry would make the dead process look alive.
    wait "$daemon_pid" 2>/dev/null || true
    pid=$daemon_pid
    daemon_pid=
    "$python" "$work/faults.py" snapshot "$work/klaxon.sqlite" "$work/rounds.jsonl" "$work/sink.log" \
        "$r" "$pid" "$started" "$killed"
done

# The last start runs until every station has been delivered and the outbox is drained.
r=$((rounds + 1))
start_daemon "$r" 2>/dev/null
[[ -n "$t0" ]] || t0=$started
deadline=$(( ${started%.*} + final_timeout ))
complete=0
while (( ${EPOCHREALTIME%.*} < deadline )); do
    if [[ $("$python" "$work/faults.py" delivered "$work/sink.log") -ge $alerts ]] &&
        "$python" "$work/faults.py" drained "$work/klaxon.sqlite"; then
        complete=1
        break
    fi
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.2
done
(( complete )) || echo "faults.sh: gave up waiting after $final_timeout s" >&2
final_pid=$daemon_pid
kill -TERM "$daemon_pid" 2>/dev/null || true
for _ in $(seq 300); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$daemon_pid" 2>/dev/null; then
    echo "faults.sh: no exit 30 s after SIGTERM; kill -9" >&2
    kill -9 "$daemon_pid" 2>/dev/null || true
fi
status=0
wait "$daemon_pid" || status=$?
daemon_pid=
stopped=$EPOCHREALTIME
echo "final run: pid $final_pid, exit status $status after SIGTERM" >&2
echo "{\"round\": $r, \"pid\": $final_pid, \"start\": $started, \"end\": $stopped, \"held\": [], \"final\": true}" >>"$work/rounds.jsonl"

"$python" "$work/faults.py" analyse "$work/sink.log" "$work/rounds.jsonl" "$work/klaxon.sqlite" "$alerts" "$t0" "$stopped"
