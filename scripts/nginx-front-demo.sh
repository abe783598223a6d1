#!/usr/bin/env bash
# Runs docs/deploy/nginx.conf for real: an origin, two `osprey serve` instances, nginx's proxy_cache in front. Asks
# nginx for the same image five times and checks that the first is a MISS rendered by one instance and the other four
# are HITs answered by nginx alone (the instances' /metrics count one image request in all), with identical bytes.
# Exits non-zero when any of that does not hold. OSPREY_BIN picks the binary (default: the debug build's).
set -euo pipefail
cd "$(dirname "$0")/.."

osprey=${OSPREY_BIN:-}
if [[ -z "$osprey" ]]; then
    swift build --product osprey >/dev/null
    swift build --product osprey-proxy >/dev/null
    osprey="$(swift build --show-bin-path)/osprey"
fi
nginx=$(command -v nginx || echo /usr/sbin/nginx)
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() {  # port: until something listens there (a second at most)
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.01
    done
    echo "nothing listens on port $1" >&2
    return 1
}

# An origin serving one 800 × 600 PNG, written with the standard library alone.
mkdir -p "$work/origin"
python3 - "$work/origin/photo.png" <<'PY'
import struct, sys, zlib
w, h = 800, 600
rows = b"".join(b"\0" + bytes(v for x in range(w) for v in (x * 255 // w, y * 255 // h, 128)) for y in range(h))
chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
open(sys.argv[1], "wb").write(png + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
PY
origin_port=$(free_port)
python3 -m http.server "$origin_port" --bind 127.0.0.1 --directory "$work/origin" >/dev/null 2>&1 &
pids+=($!)

ports=()
for n in 1 2; do
    port=$(free_port)
    ports+=("$port")
    "$osprey" serve --port "$port" --allow-unsigned --allow-private-networks --cache-dir "$work/cache$n" \
        2>"$work/osprey$n.log" &
    pids+=($!)
done

# The shipped configuration, with this run's ports and a private prefix.
nginx_port=$(free_port)
mkdir -p "$work/nginx"
# Run as root, nginx's workers switch to an unprivileged user, which must reach the cache under the work directory.
chmod 755 "$work" "$work/nginx"
sed -e "s|/var/cache/nginx/osprey|$work/nginx/cache|" \
    -e "s|127.0.0.1:8081|127.0.0.1:${ports[0]}|" -e "s|127.0.0.1:8082|127.0.0.1:${ports[1]}|" \
    -e "s|listen 80;|listen 127.0.0.1:$nginx_port;|" \
    -e "s|^worker_processes auto;|worker_processes 1; pid $work/nginx/nginx.pid; error_log $work/nginx/error.log;|" \
    -e "s|^http {|http { access_log off; client_body_temp_path $work/nginx/body; proxy_temp_path $work/nginx/proxy; fastcgi_temp_path $work/nginx/fcgi; uwsgi_temp_path $work/nginx/uwsgi; scgi_temp_path $work/nginx/scgi;|" \
    docs/deploy/nginx.conf >"$work/nginx/nginx.conf"
"$nginx" -p "$work/nginx" -c "$work/nginx/nginx.conf" -g "daemon off;" &
pids+=($!)

for port in "$origin_port" "${ports[@]}" "$nginx_port"; do wait_for "$port"; done

url="http://127.0.0.1:$nginx_port/img?url=http%3A%2F%2F127.0.0.1%3A$origin_port%2Fphoto.png&w=200&format=webp"
statuses=()
for i in 1 2 3 4 5; do
    status=$(curl -s -o "$work/body$i" -D - "$url" | tr -d '\r' | sed -n 's/^[Xx]-[Cc]ache-[Ss]tatus: //p')
    statuses+=("$status")
    cmp -s "$work/body1" "$work/body$i" || { echo "response $i differs from the first" >&2; exit 1; }
done
served=0
for port in "${ports[@]}"; do
    count=$(curl -s "http://127.0.0.1:$port/metrics" | sed -n 's/^osprey_cache_hits_total{level="origin"} //p')
    served=$((served + ${count:-0}))
done
echo "X-Cache-Status of 5 identical requests: ${statuses[*]}"
echo "images rendered by the osprey instances: $served; bytes per response: $(wc -c <"$work/body1")"
if [[ "${statuses[*]}" != "MISS HIT HIT HIT HIT" || $served -ne 1 ]]; then
    echo "expected MISS then 4 HITs, and 1 render" >&2
    exit 1
fi
echo "ok: nginx answered the repeats itself"
