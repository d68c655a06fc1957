#!/usr/bin/env bash
# The fan-out of people's watches (issue 43), a skeleton: one reading that crosses the threshold of
# WATCHES (1,000) watches, each a different person's, all posting to one channel whose receiver is a
# webhook to nginx on 127.0.0.1 (`return 200`). Reports how long `klaxon run --once` takes to
# evaluate them and deliver every notification, and how many were sent.
#
#   KLAXON=.build-release/release/klaxon Benchmarks/watch-fanout.sh
#   WATCHES=10000 Benchmarks/watch-fanout.sh
#
# Not yet what issue 43 asks for (100,000 email and 10,000 webhook/DM watches on one quake, queued
# within 2 s, RSS and /healthz p99 throughout, SIGKILL mid-fan-out, two daemons on PostgreSQL): the
# watches are inserted with sqlite3 (there is no bulk command), and one process does everything.
#
# Exit status: 0, or 2 on a setup error. It reports; it does not judge.
set -euo pipefail
[[ -n "${KLAXON:-}" && "$KLAXON" != /* && -e "$KLAXON" ]] && KLAXON="$PWD/$KLAXON"
cd "$(dirname "$0")/.."
watches=${WATCHES:-1000}
python=${PYTHON:-/usr/bin/python3}
say() { echo "watch-fanout.sh: $*" >&2; }
fail() { say "$*"; exit 2; }
command -v sqlite3 >/dev/null || fail "sqlite3 is not installed"

if [[ -z "${KLAXON:-}" ]]; then
    swift build -c release --static-swift-stdlib --scratch-path .build-release --product klaxon >&2 || fail "the release build failed"
    KLAXON=$PWD/.build-release/release/klaxon
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/klaxon-watch-fanout.XXXXXX")
cleanup() {
    local status=$?
    [[ -f "$work/nginx/nginx.pid" ]] && kill "$(cat "$work/nginx/nginx.pid")" 2>/dev/null
    [[ "${KEEP:-0}" == 1 ]] && say "kept $work" || rm -rf "$work"
    exit $status
}
trap cleanup EXIT

. Benchmarks/lib/nginx.sh
nginx_bin=$(command -v nginx || ls /usr/sbin/nginx 2>/dev/null || true)
[[ -n "$nginx_bin" ]] || fail "nginx is not installed (apt-get install nginx): nothing to measure"
start_nginx '$msec $uri'

# No rule of the team's: the watches are the only rules.
mkdir -p "$work/rules"
cat >"$work/rules/none.yaml" <<'YAML'
rules:
  - {name: nothing, kind: threshold, metric: nothing, above: 0, notify: [river]}
YAML
cat >"$work/klaxon.yaml" <<YAML
database: $work/klaxon.sqlite
rules: [$work/rules]
notify_max_age: 0s
receivers:
  - {name: river, type: webhook, preset: generic, url: "http://127.0.0.1:$nginx_port/river"}
watches:
  max_per_person: 5
  channels: {"slack:C-RIVER": river}
YAML
t0=$(date +%s)
printf 'station,metric,time,value\nG1,gage_height,%s,1\n' "$(date -u -d "@$((t0 - 600))" +%Y-%m-%dT%H:%M:%SZ)" >"$work/low.csv"
printf 'station,metric,time,value\nG1,gage_height,%s,20\n' "$(date -u -d "@$t0" +%Y-%m-%dT%H:%M:%SZ)" >"$work/high.csv"
"$KLAXON" ingest --config "$work/klaxon.yaml" "$work/low.csv" >/dev/null 2>&1 || fail "ingest failed"

# WATCHES people, each watching G1 reaching 10 ft, made in slack:C-RIVER (the store's JSON shape).
"$python" - "$work/klaxon.sqlite" "$watches" <<'PY'
import json, sqlite3, sys
db, n = sqlite3.connect(sys.argv[1]), int(sys.argv[2])
rows = []
for i in range(n):
    owner = {"platform": "slack", "id": f"T1:U{i:07d}", "name": f"person {i}"}
    body = {"owner": owner, "target": {"gauge": {"station": "G1", "level": {"value": {"_0": 10}}}},
            "destination": {"channel": {"platform": "slack", "channel": "C-RIVER"}}}
    rows.append((f"slack:T1:U{i:07d}", 1, "gauge", json.dumps(body, sort_keys=True), 0))
db.executemany("INSERT INTO watches (owner, number, kind, body, created_at) VALUES (?, ?, ?, ?, ?)", rows)
# As the store does with every change: a running daemon rebuilds its watch rules when this moves.
try:
    db.execute("UPDATE watch_changes SET generation = generation + 1 WHERE id = 1")
except sqlite3.OperationalError:
    pass  # a klaxon from before the counter
db.commit()
PY
"$KLAXON" watches --config "$work/klaxon.yaml" -o json | "$python" -c 'import json,sys; n=len(json.load(sys.stdin)); sys.exit(0 if n else 1)' \
    || fail "klaxon does not read the inserted watches (has the store's JSON shape changed?)"
"$KLAXON" run --once --config "$work/klaxon.yaml" >/dev/null 2>"$work/first.err" || { cat "$work/first.err" >&2; fail "the first run failed"; }

"$KLAXON" ingest --config "$work/klaxon.yaml" "$work/high.csv" >/dev/null 2>&1 || fail "ingest failed"
start=$(now)
"$KLAXON" run --once --config "$work/klaxon.yaml" --deadline 10m >/dev/null 2>"$work/run.err" || { cat "$work/run.err" >&2; fail "run --once failed"; }
end=$(now)
sent=$(sqlite3 "$work/klaxon.sqlite" "SELECT count(*) FROM outbox WHERE state = 'sent'")
transitions=$(sqlite3 "$work/klaxon.sqlite" "SELECT count(*) FROM transitions WHERE rule LIKE 'watch-%'")
printf 'watches\ttransitions\tsent\trun_once_s\n%s\t%s\t%s\t%s\n' "$watches" "$transitions" "$sent" "$(secs "$start" "$end")"
