#!/usr/bin/env python3
"""Runs `osprey serve --otlp-endpoint` (osprey built with the OTLP trait) against an OpenTelemetry collector stand-in
and an origin of its own, and checks what an operator's tracing backend would see. Exits non-zero when any of it does
not hold:

1. A request carrying a W3C `traceparent` is answered, and the origin is asked with a `traceparent` of the same
   trace whose parent is a span of osprey's (not the client's).
2. After SIGTERM, osprey exits 0 having sent its spans over OTLP/HTTP (protobuf, POST /v1/traces): they carry the
   client's trace id, and the request's and the pipeline's spans are there by name.

Usage: otlp-demo.py OSPREY_BINARY
"""

import http.server
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import zlib


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def png(width, height):
    rows = b"".join(b"\0" + bytes(v for x in range(width) for v in (x % 256, y % 256, 90)) for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def serve(handler):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    osprey = sys.argv[1]
    image = png(400, 300)
    origin_headers = []
    exported = []

    class Origin(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            origin_headers.append({k.lower(): v for k, v in self.headers.items()})
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(image)))
            self.end_headers()
            self.wfile.write(image)

        def log_message(self, *args):
            pass

    class Collector(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            exported.append((self.path, self.headers.get("Content-Type"), body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    origin = serve(Origin)
    collector = serve(Collector)
    work = tempfile.mkdtemp(prefix="osprey-otlp-")
    port = free_port()
    log = open(f"{work}/osprey.log", "wb")
    process = subprocess.Popen(
        [osprey, "serve", "--port", str(port), "--allow-unsigned", "--allow-private-networks", "--cache-dir", work,
         "--otlp-endpoint", f"http://127.0.0.1:{collector.server_port}"],
        stdout=log, stderr=subprocess.STDOUT)
    failures = []
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    sys.exit("osprey serve did not start")
                time.sleep(0.02)

        trace_id = os.urandom(16).hex()
        client_span = os.urandom(8).hex()
        source = f"http://127.0.0.1:{origin.server_port}/photo.png"
        url = f"http://127.0.0.1:{port}/img?" + urllib.parse.urlencode({"url": source, "w": "120", "format": "webp"})
        request = urllib.request.Request(url, headers={"traceparent": f"00-{trace_id}-{client_span}-01"})
        with urllib.request.urlopen(request, timeout=30) as response:
            status, content_type = response.status, response.headers.get("Content-Type")
        print(f"1. GET /img with traceparent 00-{trace_id}-{client_span}-01: {status} {content_type}")
        sent = origin_headers[0].get("traceparent", "") if origin_headers else ""
        match = re.fullmatch(r"00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]", sent)
        print(f"   the origin was asked with traceparent {sent or '(none)'}")
        if status != 200 or content_type != "image/webp":
            failures.append(f"the request answered {status} {content_type}")
        if not match or match.group(1) != trace_id or match.group(2) == client_span:
            failures.append("the origin did not get the trace with a span of osprey's as its parent")

        process.send_signal(signal.SIGTERM)
        exit_status = process.wait(timeout=60)
        bodies = b"".join(body for _, _, body in exported)
        names = [name for name in ["GET /img", "osprey.cache.lookup", "osprey.download", "osprey.decode",
                                   "osprey.process", "osprey.encode", "osprey.cache.store"]
                 if name.encode() in bodies]
        print(f"2. osprey exited {exit_status}; the collector got {len(exported)} export(s) "
              f"({', '.join(sorted({f'{path} {kind}' for path, kind, _ in exported})) or 'none'}), "
              f"{len(bodies)} bytes, with the client's trace id: {bytes.fromhex(trace_id) in bodies}; spans: {names}")
        if exit_status != 0:
            failures.append(f"osprey exited {exit_status}")
        if not exported or any(path != "/v1/traces" or kind != "application/x-protobuf" for path, kind, _ in exported):
            failures.append("no OTLP/HTTP protobuf export to /v1/traces")
        if bytes.fromhex(trace_id) not in bodies:
            failures.append("the exported spans do not carry the client's trace id")
        missing = {"GET /img", "osprey.download", "osprey.decode", "osprey.process", "osprey.encode"} - set(names)
        if missing:
            failures.append(f"spans missing from the export: {sorted(missing)}")
    finally:
        if process.poll() is None:
            process.kill()
        log.close()
        if failures:
            with open(f"{work}/osprey.log", errors="replace") as f:
                print("--- osprey.log\n" + f.read()[-3000:], file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)
        origin.shutdown()
        collector.shutdown()
    if failures:
        for failure in failures:
            print("FAIL: " + failure, file=sys.stderr)
        sys.exit(1)
    print("ok: the trace continued through osprey to the origin and was exported over OTLP")


if __name__ == "__main__":
    main()
