#!/usr/bin/env python3
"""Helpers for Benchmarks/liveness.sh: test data, the probe, the webhook sink, one-row pushes, the
evaluator's progress (read from the database), and the report.

    liveness_tools.py gen FILE SERIES PER_SERIES BATCH BASE_EPOCH [station|time]
    liveness_tools.py probe OUT STOP_FILE TIMEOUT URL@RATE...
    liveness_tools.py sink PORT_FILE GATE_FILE DONE_FILE LOG TARGET
    liveness_tools.py push OUT STOP_FILE INTERVAL URL TOKEN STATION
    liveness_tools.py settle OUT DB LOG TIMEOUT [URL TOKEN]
    liveness_tools.py report WORK
"""
import calendar
import http.client
import json
import os
import re
import sqlite3
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

P99_MS, MAX_MS = 50.0, 250.0  # the target, for every phase


def iso(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def gen(path, series, per_series, batch, base, order="time"):
    """Readings for SERIES stations, PER_SERIES each, 15 minutes apart. Batch 1 rises through the
    threshold (100) once per station: one firing alert each. Batch 2 continues later and stays above
    it, so the evaluator steps every reading and records no transition: (e) measures the evaluator's
    work, not another delivery flood.

    ORDER `time` lists them time by time, as a feed delivers them (and as KlaxonBench's data is):
    every 50,000-reading batch of `klaxon ingest` then touches every station. `station` lists them
    station by station, as a backfill export does: the old ingest takes 9 s instead of 33 s for 1 M
    readings over 20,000 stations, and the old evaluator leaves fewer `ingest_log` rows to read."""
    series, per_series, batch, base = int(series), int(per_series), int(batch), int(base)
    offset = (batch - 1) * per_series
    times = [iso(base + (offset + k) * 900) for k in range(per_series)]
    stations = ["L%06d" % s for s in range(series)]

    def value(s, k):
        # Batch 1 crosses 100 at the middle reading whatever PER_SERIES is.
        return (100 - per_series // 2 + k if batch == 1 else 150 + k % 5) + (s % 10) / 10

    with open(path, "w") as f:
        f.write("station,metric,time,value\n")
        line = "%s,level,%s,%.1f\n"
        if order == "station":
            for s, station in enumerate(stations):
                f.write("".join(line % (station, t, value(s, k)) for k, t in enumerate(times)))
        else:
            for k, t in enumerate(times):
                f.write("".join(line % (station, t, value(s, k)) for s, station in enumerate(stations)))


def request(method, url, timeout, body=None, headers=None):
    """(latency in ms, status, body) on a new connection; latency -1 and the error's name when it fails."""
    p = urllib.parse.urlparse(url)
    ts = time.time()
    try:
        c = http.client.HTTPConnection(p.hostname, p.port, timeout=timeout)
        c.request(method, p.path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        return (time.time() - ts) * 1000, r.status, data
    except Exception as e:
        return -1, type(e).__name__, b""


def classify(status, data):
    """`503-busy` for the answer README documents while another process holds the write lock."""
    if status == 503:
        try:
            if json.loads(data).get("database") == "busy":
                return "503-busy"
        except (ValueError, AttributeError):
            pass
    return str(status)


def probe(out, stop_path, timeout, *targets):
    """Measures like /work/shared/tools/http-probe.py (a GET on a new connection per request, each in
    its own thread, sent on a fixed schedule), but runs until STOP_FILE appears instead of for a fixed
    time: the phases' lengths are not known in advance. Each row has its send time, so the report
    splits one run into phases."""
    timeout = float(timeout)
    rows, lock, threads = [], threading.Lock(), []

    def one(url, ts):
        lat, status, data = request("GET", url, timeout)
        with lock:
            rows.append((ts, url, lat, classify(status, data) if lat >= 0 else status))

    def schedule(url, rate):
        t0, i = time.time(), 0
        while not os.path.exists(stop_path):
            due = t0 + i / rate
            now = time.time()
            if due > now:
                time.sleep(due - now)
            t = threading.Thread(target=one, args=(url, time.time()), daemon=True)
            t.start()
            threads.append(t)
            i += 1

    open(out + ".started", "w").close()
    schedulers = []
    for target in targets:
        url, rate = target.rsplit("@", 1)
        schedulers.append(threading.Thread(target=schedule, args=(url, float(rate))))
    for t in schedulers:
        t.start()
    for t in schedulers:
        t.join()
    end = time.time() + timeout + 0.5
    for t in threads:
        t.join(max(0, end - time.time()))
    with lock, open(out, "w") as f:
        f.write("epoch,url,latency_ms,status\n")
        for ts, url, lat, status in sorted(rows):
            f.write("%.3f,%s,%.1f,%s\n" % (ts, url, lat, status))


def sink(port_path, gate_path, done_path, log_path, target):
    """A webhook receiver on 127.0.0.1 that answers 200 at once, but only after GATE_FILE exists.
    The dispatcher starts as soon as the evaluator commits outbox rows, which (sliced or not) can be
    before the evaluator has finished; holding its first sends here (its receiver timeout is long, so
    they wait rather than fail and back off) keeps delivery out of phase (c) and starts all of it at
    the start of (d). Writes DONE_FILE when it has answered TARGET distinct idempotency keys."""
    target = int(target)
    gate, lock = threading.Event(), threading.Lock()
    keys, state = set(), {"done": False}
    log = open(log_path, "a", buffering=1)

    def watch():
        while not os.path.exists(gate_path):
            time.sleep(0.02)
        gate.set()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; with Nagle's algorithm and delayed ACKs each answer
        # would wait ~40 ms.
        disable_nagle_algorithm = True

        def body(self):
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return
                    self.rfile.read(size)
                    self.rfile.readline()
            self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_POST(self):
            self.body()
            received = time.time()
            gate.wait()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            key = self.headers.get("Idempotency-Key") or "-"
            with lock:
                log.write("%.3f %.3f %s\n" % (received, time.time(), key))
                keys.add(key)
                if len(keys) >= target and not state["done"]:
                    state["done"] = True
                    with open(done_path + ".tmp", "w") as f:
                        f.write("%.3f\n" % time.time())
                    os.rename(done_path + ".tmp", done_path)

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=watch, daemon=True).start()
    with open(port_path + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_path + ".tmp", port_path)
    server.serve_forever()


def push_one(url, token, station, at, timeout=30):
    body = "station,metric,time,value\n%s,heartbeat,%s,1\n" % (station, iso(at))
    headers = {"Authorization": "Bearer " + token, "Content-Type": "text/csv"}
    lat, status, data = request("POST", url, timeout, body.encode(), headers)
    return lat, (classify(status, data) if lat >= 0 else status)


def push(out, stop_path, interval, url, token, station):
    """One-row pushes every INTERVAL s, each in its own thread so a slow answer does not delay the next
    (a feed does not wait either), each with a new time so it stores a reading and wakes the evaluator."""
    interval, rows, lock, threads = float(interval), [], threading.Lock(), []
    base = int(time.time()) - 86400

    def one(i, ts):
        lat, status = push_one(url, token, station, base + i)
        with lock:
            rows.append((ts, lat, status))

    t0, i = time.time(), 0
    while not os.path.exists(stop_path):
        due = t0 + i * interval
        now = time.time()
        if due > now:
            time.sleep(due - now)
            continue
        t = threading.Thread(target=one, args=(i, now), daemon=True)
        t.start()
        threads.append(t)
        i += 1
    for t in threads:
        t.join(31)
    with lock, open(out, "w") as f:
        f.write("epoch,latency_ms,status\n")
        for ts, lat, status in sorted(rows):
            f.write("%.3f,%.1f,%s\n" % (ts, lat, status))


def evaluations(log_path):
    """(time, readings, transitions) of each `evaluated` line in the daemon's log, written when an
    evaluation has returned (its transaction, quakes, trips, reminders and escalations all done)."""
    found = []
    try:
        with open(log_path, errors="replace") as f:
            for line in f:
                line = line.rstrip()
                readings = re.search(r"\breadings=(\d+)\b", line)
                if not line.endswith(" evaluated") or not readings:
                    continue
                transitions = re.search(r"\btransitions=(\d+)\b", line)
                at = calendar.timegm(time.strptime(line[:19], "%Y-%m-%dT%H:%M:%S"))
                found.append((at, int(readings.group(1)), int(transitions.group(1)) if transitions else 0))
    except OSError:
        pass
    return found


def evaluated(log_path):
    """(readings, evaluations) that the daemon's log reports so far."""
    found = evaluations(log_path)
    return sum(e[1] for e in found), len(found)


def settle(out, db_path, log_path, timeout, url=None, token=None):
    """Waits until the evaluator has worked through everything ingested so far, and the evaluation
    that did it has returned. No log line, metric or status command says when a backlog is done
    (and /metrics would load the daemon it measures), so: the readings that the `evaluated` log lines
    since the daemon started report add up to those `ingest_log` holds as of now (evaluations run one
    after another, each over the entries after the previous one's cursor). The cursor (meta
    `evaluated_log_seq`) alone comes too early: the old daemon went on working, holding the write
    lock, for tens of seconds after committing it; its time is reported too. With URL, a one-row
    push first wakes the evaluator: a `klaxon ingest` in another process does not, and the daemon's
    own tick would start it up to a minute later."""
    t0, timeout = time.time(), float(timeout)
    db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True, timeout=30)
    one = lambda sql: db.execute(sql).fetchone()[0]
    top, expected = db.execute("SELECT coalesce(max(seq), 0), coalesce(sum(count), 0) FROM ingest_log").fetchone()
    result = {"top": top, "expected": expected}
    if url:
        woke = {}
        at = int(t0) - 3600

        def wake():
            woke["latency_ms"], woke["status"] = push_one(url, token, "LIVENESS-WAKE", at)

        waker = threading.Thread(target=wake, daemon=True)
        waker.start()
    cursor, readings, lines = -1, 0, 0
    while time.time() - t0 < timeout:
        if "cursor_seconds" not in result:
            cursor = one("SELECT coalesce(max(CAST(value AS INTEGER)), 0) FROM meta WHERE key = 'evaluated_log_seq'")
            if cursor >= top:
                result["cursor_seconds"] = round(time.time() - t0, 2)
        readings, lines = evaluated(log_path)
        if readings >= expected:
            break
        time.sleep(0.1)
    done = readings >= expected
    if done and "cursor_seconds" not in result:  # committed and logged between two looks
        result["cursor_seconds"] = round(time.time() - t0, 2)
    result.update({"cursor": cursor, "logged_readings": readings, "evaluations": lines, "caught_up": done,
                   "seconds": round(time.time() - t0, 2),
                   "firing": one("SELECT count(*) FROM transitions WHERE state = 'firing'")})
    if url:
        waker.join(30)
        result["wake"] = woke
    with open(out, "w") as f:
        json.dump(result, f)
    sys.exit(0 if done else 1)


def pct(values, p):
    """As http-probe.py: the value at index int(p * n) of the sorted list."""
    return values[min(len(values) - 1, int(p * len(values)))] if values else None


def ms(x, timeout=None):
    """Milliseconds for the table; a request that failed shows as at least the probe's timeout."""
    if x is None:
        return "–"
    if x == float("inf"):
        return "≥ {:,.0f}".format(timeout * 1000)
    return "%.1f" % x if x < 100 else "{:,.0f}".format(x)


def report(work):
    """The Markdown table on stdout; exit status 0 when every phase met the target."""
    phases = []
    with open(os.path.join(work, "phases.tsv")) as f:
        for line in f:
            key, label, start, end = line.rstrip("\n").split("\t")
            phases.append((key, label, float(start), float(end)))
    probes = []
    with open(os.path.join(work, "probe.csv")) as f:
        next(f)
        for line in f:
            ts, url, lat, status = line.rstrip("\n").split(",")
            probes.append((float(ts), urllib.parse.urlparse(url).path, float(lat), status))
    info = {}
    with open(os.path.join(work, "info.tsv")) as f:
        for line in f:
            key, value = line.rstrip("\n").split("\t", 1)
            info.setdefault(key, []).append(value)
    info = {k: v if k == "incomplete" else v[-1] for k, v in info.items()}

    print("| phase | s | endpoint | requests | failed | p50 ms | p99 ms | max ms | target |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|")
    timeout = float(info["probe_timeout"])
    all_met = True
    for key, label, start, end in phases:
        for i, path in enumerate(("/healthz", "/readyz")):
            rows = [r for r in probes if r[1] == path and start <= r[0] < end]
            # A request without an answer ranks above every answer: percentiles over the answered
            # ones alone would call a phase where most requests timed out fast.
            lat = sorted(r[2] if r[2] >= 0 else float("inf") for r in rows)
            busy = sum(1 for r in rows if r[3] == "503-busy")
            failed = sum(1 for r in rows if r[2] < 0 or r[3] not in ("200", "503-busy"))
            p50, p99, top = pct(lat, 0.5), pct(lat, 0.99), lat[-1] if lat else None
            missed = []
            if not rows:
                missed.append("no requests")
            if failed:
                missed.append("failed")
            if p99 is not None and p99 > P99_MS:
                missed.append("p99")
            if top is not None and top > MAX_MS:
                missed.append("max")
            all_met = all_met and not missed
            print("| %s | %s | %s | %s | %s%s | %s | %s | %s | %s |" % (
                label if i == 0 else "", "%.1f" % (end - start) if i == 0 else "", path,
                "{:,}".format(len(rows)), "{:,}".format(failed),
                " (+%d busy)" % busy if busy else "", ms(p50, timeout), ms(p99, timeout), ms(top, timeout),
                "missed (%s)" % ", ".join(missed) if missed else "met"))

    print()
    print("Target in every phase: p99 ≤ %.0f ms, max ≤ %.0f ms, no request failed. Failed: no answer within"
          " the probe's %s s (ranked as the slowest, shown as ≥ %s ms), or a status other than 200; a /readyz"
          " 503 `\"database\": \"busy\"`, its documented answer while another process holds the write lock,"
          " is counted apart as busy." % (P99_MS, MAX_MS, info["probe_timeout"],
                                          "{:,.0f}".format(timeout * 1000)))
    print()
    print("- binary: `%s`; %s readings per batch, %s series, %s readings each, listed by %s; probes at %s"
          " requests/s per endpoint, a new connection each" % (
              info["klaxon"], "{:,}".format(int(info["readings"])), "{:,}".format(int(info["series"])),
              info["per_series"], info["order"], info["rate"]))
    # Stalls as the issue counted them: spans in which neither probe got an answer, though requests
    # went out every 1/(2 RATE) s. Each counts in the phase it began in.
    done = sorted(r[0] + r[2] / 1000 for r in probes if r[2] >= 0)
    stalls = [(a, b - a) for a, b in zip(done, done[1:]) if b - a > MAX_MS / 1000]
    print("- stalls (no answer to either probe for more than %.0f ms; each in the phase it began in): %s" % (
        MAX_MS, "; ".join(
        "%s %d%s" % (label, len(found), "" if not found else ", %.1f s" % found[0] if len(found) == 1
                     else ", %.1f–%.1f s" % (min(found), max(found)))
        for key, label, start, end in phases
        for found in [[d for a, d in stalls if start <= a < end]])))
    for name in ("b", "e"):
        if "ingest_%s_seconds" % name in info:
            print("- (%s) `klaxon ingest`: %.1f s" % (name, float(info["ingest_%s_seconds" % name])))
    for name, what in (("c", "(c)"), ("e2", "(e′)")):
        try:
            s = json.load(open(os.path.join(work, "settle-%s.json" % name)))
        except (OSError, ValueError):
            continue
        line = "- %s evaluator: its cursor reached the end of the backlog %s and its evaluation returned %s the" \
               " ingest ended (evaluations logged since the start: %d); firing transitions: %s" % (
                   what, "%.1f s" % s["cursor_seconds"] if "cursor_seconds" in s else "NEVER",
                   "%.1f s after" % s["seconds"] if s["caught_up"] else "NOT within %.0f s of" % s["seconds"],
                   s["evaluations"], "{:,}".format(s["firing"]))
        if "wake" in s:
            wake = s["wake"]
            if wake.get("latency_ms", -1) >= 0:
                line += "; the push that woke it was answered %s in %s ms" % (wake["status"], ms(wake["latency_ms"]))
            else:
                line += "; the push that woke it failed: %s" % wake.get("status", "no answer")
        print(line)
    try:
        hooks = [line.split() for line in open(os.path.join(work, "sink.log"))]
    except OSError:
        hooks = []
    keys = {h[2] for h in hooks}
    d = next((p for p in phases if p[0] == "d"), None)
    held = sum(1 for h in hooks if d and float(h[0]) < d[2])
    by_phase = ", ".join("%s %d" % (label.split()[0], sum(1 for h in hooks if start <= float(h[1]) < end))
                         for _, label, start, end in phases)
    logged = evaluations(os.path.join(work, "daemon.log"))
    # The log has whole seconds: an evaluation is placed in the phase its second began in.
    where = lambda at: next((label for _, label, start, end in phases if int(start) <= at < end), "between phases")
    print("- evaluations with new readings, as logged when each returned: %s" % ("; ".join(
        "%s in %s: %s readings, %s transitions" % (time.strftime("%H:%M:%S", time.gmtime(at)), where(at),
                                                    "{:,}".format(n), "{:,}".format(t)) for at, n, t in logged)
        or "none"))
    print("- webhooks answered by the sink: %s requests, %s distinct keys (expected %s); %d had arrived before"
          " (d) and were held there; answered by phase: %s" % ("{:,}".format(len(hooks)), "{:,}".format(len(keys)),
                                                                "{:,}".format(int(info["series"])), held, by_phase))
    if d and d[3] > d[2]:
        print("- (d) throughput: {:,.0f} webhooks/s".format(sum(1 for h in hooks if d[2] <= float(h[1]) < d[3])
                                                     / (d[3] - d[2])))
    try:
        pushes = [line.rstrip("\n").split(",") for line in list(open(os.path.join(work, "push.csv")))[1:]]
    except OSError:
        pushes = []
    if pushes:
        lat = sorted(float(p[1]) for p in pushes if float(p[1]) >= 0)
        statuses = {}
        for p in pushes:
            statuses[p[2]] = statuses.get(p[2], 0) + 1
        print("- (e) one-row pushes every %s s: %d sent (%s); latency p50 %s, p99 %s, max %s ms" % (
            info["push_every"], len(pushes), ", ".join("%s %d" % kv for kv in sorted(statuses.items())),
            ms(pct(lat, 0.5)), ms(pct(lat, 0.99)), ms(lat[-1] if lat else None)))
    if info.get("incomplete"):
        print("- incomplete: %s" % "; ".join(info["incomplete"]))
        all_met = False
    print("- wall time: %.0f s" % (float(info.get("finished", time.time())) - float(info["started"])))
    sys.exit(0 if all_met else 1)


if __name__ == "__main__":
    commands = {"gen": gen, "probe": probe, "sink": sink, "push": push, "settle": settle, "report": report}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](*sys.argv[2:])
