#!/usr/bin/env python3
"""Runs docs/deploy/nginx-fleet.conf for real: an origin with 100 source images, three `osprey serve` instances,
nginx in front hashing on the source. Checks, and exits non-zero when any of it does not hold:

1. 300 requests (100 sources x 3 variants, 16 at a time) all answer 200, and each source was fetched from the origin
   exactly once across the fleet.
2. A rendered URL has the same ETag and bytes whichever instance answers it.
3. `Vary: Accept` is respected by nginx's cache: `format=auto` asked with different Accept headers gets each its own
   format (WebP, or the source's PNG), and a repeat is a cache hit of the right one.
4. Failover: one instance is stopped (SIGTERM) in the middle of 300 more requests; none of them fails with a 5xx
   beyond those in flight at the stop, and the stopped instance exits 0 after finishing its own.

OSPREY_BIN picks the binary (default: the debug build's); NGINX_BIN nginx (default: from PATH, else /usr/sbin/nginx).
"""

import concurrent.futures
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = 100
CONCURRENCY = 16


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port, process=None, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            sys.exit(f"the process meant to listen on port {port} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    sys.exit(f"nothing listens on port {port}")


def png(width, height, seed):
    """A PNG of a gradient whose colours depend on `seed`, written with the standard library alone."""
    rows = b"".join(
        b"\0" + bytes(v for x in range(width) for v in ((x * 255 // width + seed * 37) % 256,
                                                         (y * 255 // height + seed * 11) % 256, seed * 2 % 256))
        for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


ORIGIN = r'''
import http.server, sys, threading
counts, lock = {}, threading.Lock()
class Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/counts":
            with lock:
                body = "\n".join(f"{k} {v}" for k, v in sorted(counts.items())).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        with lock:
            counts[self.path] = counts.get(self.path, 0) + 1
        super().do_GET()
    def log_message(self, *args):
        pass
handler = lambda *a, **k: Handler(*a, directory=sys.argv[2], **k)
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), handler).serve_forever()
'''


def get(url, headers=None):
    """(status, headers, body) of a GET; a refused connection or a timeout is status 0."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        return 0, {}, str(error).encode()


class Fleet:
    def __init__(self, osprey, nginx, work):
        self.work = work
        self.processes = []
        os.makedirs(f"{work}/origin")
        for n in range(SOURCES):
            with open(f"{work}/origin/source{n}.png", "wb") as f:
                f.write(png(320, 240, n))
        self.origin_port = free_port()
        origin = self.start([sys.executable, "-c", ORIGIN, str(self.origin_port), f"{work}/origin"], "origin")
        self.instance_ports = [free_port() for _ in range(3)]
        self.instances = [
            self.start([osprey, "serve", "--port", str(port), "--allow-unsigned", "--allow-private-networks",
                        "--cache-dir", f"{work}/cache{n}", "--log-level", "warning"], f"osprey{n}")
            for n, port in enumerate(self.instance_ports)]
        self.nginx_port = free_port()
        os.makedirs(f"{work}/nginx")
        # Run as root, nginx's workers switch to an unprivileged user, which must reach the cache under the work
        # directory.
        os.chmod(work, 0o755)
        os.chmod(f"{work}/nginx", 0o755)
        with open(f"{ROOT}/docs/deploy/nginx-fleet.conf") as f:
            conf = f.read()
        for old, new in [
            ("/var/cache/nginx/osprey", f"{work}/nginx/cache"),
            ("127.0.0.1:8081", f"127.0.0.1:{self.instance_ports[0]}"),
            ("127.0.0.1:8082", f"127.0.0.1:{self.instance_ports[1]}"),
            ("127.0.0.1:8083", f"127.0.0.1:{self.instance_ports[2]}"),
            ("listen 80;", f"listen 127.0.0.1:{self.nginx_port};"),
            ("worker_processes auto;",
             f"worker_processes 1; pid {work}/nginx/nginx.pid; error_log {work}/nginx/error.log;"),
            ("http {", f"http {{ access_log off; client_body_temp_path {work}/nginx/body; "
                       f"proxy_temp_path {work}/nginx/proxy; fastcgi_temp_path {work}/nginx/fcgi; "
                       f"uwsgi_temp_path {work}/nginx/uwsgi; scgi_temp_path {work}/nginx/scgi;"),
        ]:
            assert old in conf, old
            conf = conf.replace(old, new, 1)
        with open(f"{work}/nginx/nginx.conf", "w") as f:
            f.write(conf)
        nginx_process = self.start([nginx, "-p", f"{work}/nginx", "-c", f"{work}/nginx/nginx.conf",
                                    "-g", "daemon off;"], "nginx")
        wait_for(self.origin_port, origin)
        for port, process in zip(self.instance_ports, self.instances):
            wait_for(port, process)
        wait_for(self.nginx_port, nginx_process)

    def start(self, command, name):
        log = open(f"{self.work}/{name}.log", "wb")
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        self.processes.append(process)
        return process

    def stop(self):
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()

    def image_path(self, source, **parameters):
        url = f"http://127.0.0.1:{self.origin_port}/source{source}.png"
        return "/img?" + urllib.parse.urlencode({"url": url, **parameters})

    def origin_counts(self):
        _, _, body = get(f"http://127.0.0.1:{self.origin_port}/counts")
        return {line.split()[0]: int(line.split()[1]) for line in body.decode().splitlines() if line}


def run(paths, fleet, headers=None, on_completed=None):
    """GETs every path through nginx, CONCURRENCY at a time; returns [(path, status, headers, body)] in order."""
    results = [None] * len(paths)
    done = 0
    lock = threading.Lock()

    def one(index):
        nonlocal done
        status, response_headers, body = get(f"http://127.0.0.1:{fleet.nginx_port}{paths[index]}", headers)
        results[index] = (paths[index], status, response_headers, body)
        with lock:
            done += 1
            count = done
        if on_completed:
            on_completed(count)

    with concurrent.futures.ThreadPoolExecutor(CONCURRENCY) as pool:
        list(pool.map(one, range(len(paths))))
    return results


def main():
    osprey = os.environ.get("OSPREY_BIN")
    if not osprey:
        for product in ("osprey", "osprey-proxy"):
            subprocess.run(["swift", "build", "--product", product], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        bin_path = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, check=True,
                                  capture_output=True, text=True).stdout.strip()
        osprey = f"{bin_path}/osprey"
    nginx = os.environ.get("NGINX_BIN") or shutil.which("nginx") or "/usr/sbin/nginx"
    work = tempfile.mkdtemp(prefix="osprey-fleet-")
    fleet = None
    failures = []
    try:
        fleet = Fleet(osprey, nginx, work)

        # 1. 300 requests over 100 sources: one origin fetch per source across the fleet.
        variants = [{"w": "100"}, {"w": "200", "format": "webp"}, {"h": "120", "fit": "cover", "w": "120"}]
        paths = [fleet.image_path(n, **variant) for variant in variants for n in range(SOURCES)]
        started = time.monotonic()
        results = run(paths, fleet)
        elapsed = time.monotonic() - started
        statuses = [status for _, status, _, _ in results]
        counts = fleet.origin_counts()
        fetches = [counts.get(f"/source{n}.png", 0) for n in range(SOURCES)]
        print(f"1. {len(paths)} requests over {SOURCES} sources in {elapsed:.1f} s: "
              f"{statuses.count(200)} answered 200; origin fetches per source: min {min(fetches)}, "
              f"max {max(fetches)}, total {sum(fetches)}")
        if statuses.count(200) != len(paths):
            failures.append(f"not every request answered 200: {sorted(set(statuses))}")
        if fetches != [1] * SOURCES:
            failures.append(f"sources fetched other than once: {[(n, c) for n, c in enumerate(fetches) if c != 1]}")

        # 2. The same rendered URL has the same ETag and bytes on every instance.
        mismatched = 0
        for path, _, headers, body in results[::25]:
            answers = [get(f"http://127.0.0.1:{port}{path}") for port in fleet.instance_ports]
            if any(status != 200 or h.get("ETag") != headers.get("ETag") or b != body for status, h, b in answers):
                mismatched += 1
        print(f"2. {len(results[::25])} rendered URLs asked of each of the 3 instances directly: "
              f"{mismatched} with a different ETag or body")
        if mismatched:
            failures.append(f"{mismatched} URLs differ between instances")

        # 3. Vary: Accept through nginx's cache: each Accept its own cached variant.
        auto = fleet.image_path(7, w="90", format="auto")
        seen = []
        for accept in ["image/webp,*/*", "image/jpeg", "image/webp,*/*", "image/jpeg"]:
            _, _, headers, body = run([auto], fleet, headers={"Accept": accept})[0]
            seen.append((accept.split(",")[0], headers.get("Content-Type"), headers.get("X-Cache-Status")))
        print("3. format=auto through nginx: " + ", ".join(f"{a} -> {t} ({c})" for a, t, c in seen))
        # A client that takes no modern format gets the source's own (PNG here).
        expected = [("image/webp", "image/webp"), ("image/jpeg", "image/png")] * 2
        if [(a, t) for a, t, _ in seen] != expected or [c for _, _, c in seen[2:]] != ["HIT", "HIT"]:
            failures.append(f"Vary: Accept not respected: {seen}")

        # 4. Failover: stop one instance in the middle of 300 requests nginx has not cached.
        victim = fleet.instances[1]
        stop = {"in_flight": None}
        stop_lock = threading.Lock()
        total = 300
        submitted_paths = [fleet.image_path(n, w=str(w)) for w in (90, 110, 130) for n in range(SOURCES)]

        def on_completed(count):
            with stop_lock:
                if count == total // 3 and stop["in_flight"] is None:
                    # Everything submitted and not completed is in flight: at most CONCURRENCY - 1 others.
                    stop["in_flight"] = min(CONCURRENCY, total - count)
                    victim.send_signal(signal.SIGTERM)

        results = run(submitted_paths, fleet, on_completed=on_completed)
        statuses = [status for _, status, _, _ in results]
        server_errors = sum(1 for status in statuses if status >= 500 or status == 0)
        victim_status = victim.wait(timeout=60)
        print(f"4. {total} requests, instance 2 stopped after {total // 3}: {statuses.count(200)} answered 200, "
              f"{server_errors} 5xx or failed (in flight at the stop: at most {stop['in_flight']}); "
              f"the stopped instance exited {victim_status}")
        if server_errors > (stop["in_flight"] or 0):
            failures.append(f"{server_errors} requests failed, more than the {stop['in_flight']} in flight")
        if victim_status != 0:
            failures.append(f"the stopped instance exited {victim_status}")
        if statuses.count(200) + server_errors != total:
            failures.append(f"unexpected statuses: {sorted(set(statuses))}")
    finally:
        if fleet:
            fleet.stop()
        if failures:
            for name in sorted(os.listdir(work)):
                if name.endswith(".log"):
                    with open(f"{work}/{name}", errors="replace") as f:
                        tail = f.read()[-2000:]
                    print(f"--- {name}\n{tail}", file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        for failure in failures:
            print("FAIL: " + failure, file=sys.stderr)
        sys.exit(1)
    print("ok: one fetch per source across the fleet, equal ETags, Vary respected, failover without errors")


if __name__ == "__main__":
    main()
