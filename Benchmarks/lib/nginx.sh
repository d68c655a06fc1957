# Sourced by the benchmarks that deliver to nginx. Needs: $work, $nginx_bin, $python, fail.
#
#   free_port                   # a free TCP port on 127.0.0.1
#   now; secs T0 T1             # a wall-clock instant; seconds from T0 to T1 (3 decimals)
#
#   start_nginx 'LOG FORMAT'    # e.g. '$msec $uri'
#
# Starts nginx under $work/nginx (one worker per core, `return 200` for every request, each logged to
# $work/nginx/access.log in LOG FORMAT), waits until it answers, and sets nginx_port. Stopped by the
# caller's cleanup (kill "$(cat "$work/nginx/nginx.pid")").
free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { echo "$EPOCHREALTIME"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

start_nginx() {
    nginx_port=$(free_port)
    mkdir -p "$work/nginx/logs"
    cat >"$work/nginx/nginx.conf" <<CONF
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 4096; }
http {
    log_format timed '$1';
    access_log $work/nginx/access.log timed;
    client_body_temp_path $work/nginx/body;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$nginx_port;
        location / { return 200; }
    }
}
CONF
    "$nginx_bin" -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" ||
        fail "nginx did not start: $(tail -n 3 "$work/nginx/error.log" 2>/dev/null)"
    for _ in $(seq 100); do
        curl -s -o /dev/null "http://127.0.0.1:$nginx_port/ping" && break
        sleep 0.05
    done
}
