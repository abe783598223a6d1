#!/usr/bin/env python3
"""Download throughput of Osprey's ImageDownloader beside curl, Python aiohttp and Foundation's URLSession, in one run.

Installs what it needs (Debian's nginx and curl; aiohttp into the venv under Benchmarks/.venv), builds
download-benchmark in release, starts nginx on 127.0.0.1 and a free port serving a folder of images of mixed sizes
(the corpus's valid images when present, in place; else generated files of 1 KB to 1 MB), and downloads the same
2,000 URLs with each client at concurrency 6 and 32, in alternating rounds, keeping each client's best. It prints
requests per second, CPU seconds per GB (client process only) and the ratios, then the Downloader issue's targets
with PASS/FAIL:

  - Osprey >= 2x URLSession and >= 1x aiohttp in requests per second, >= 0.8x curl;
  - 1,000 concurrent requests for one URL reach nginx exactly once (counted in its access log).
"""
import json, os, random, shutil, socket, subprocess, tempfile, time
from pathlib import Path

from benchkit import apt_install, build, record, venv_python

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / ".build" / "bench-http"
DOWNLOADS = int(os.environ.get("DOWNLOADS", "2000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
CONCURRENCIES = [6, 32]

AIOHTTP_CLIENT = r"""
import asyncio, json, sys, time, aiohttp
async def main(concurrency, urls):
    semaphore = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency)
    total = failures = 0
    async with aiohttp.ClientSession(connector=connector) as session:
        async def fetch(url):
            nonlocal total, failures
            async with semaphore:
                try:
                    async with session.get(url) as response:
                        body = await response.read()
                        total += len(body)
                except Exception:
                    failures += 1
        await asyncio.gather(*(fetch(url) for url in urls))
    return total, failures
urls = open(sys.argv[2]).read().split()
start = time.perf_counter()
total, failures = asyncio.run(main(int(sys.argv[1]), urls))
seconds = time.perf_counter() - start
print(json.dumps({"requests": len(urls), "failures": failures, "bytes": total, "seconds": seconds}))
"""


def ensure_peers():
    apt_install([p for p, tool in (("nginx-light", "nginx"), ("curl", "curl"))
                 if not shutil.which(tool) and not Path("/usr/sbin/" + tool).exists()])
    return venv_python(["aiohttp"], ["aiohttp"])


def content():
    """The folder nginx serves and the paths in it: the corpus's valid images, or generated files."""
    corpus = Path(os.environ.get("OSPREY_TESTDATA", ROOT.parent / "shared" / "testdata")) / "images"
    if (corpus / "valid").is_dir():
        files = sorted(p.relative_to(corpus).as_posix() for p in (corpus / "valid").rglob("*")
                       if p.is_file() and p.stat().st_size >= 256)
        return corpus, files
    generated = DATA / "files"
    generated.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    files = []
    for index in range(200):
        size = int(1024 * (1024 ** rng.random()))  # 1 KB .. 1 MB, log-uniform
        path = generated / f"image-{index}.bin"
        if not path.exists() or path.stat().st_size != size:
            path.write_bytes(os.urandom(size))
        files.append(path.name)
    return generated, files


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_certificate(prefix):
    """A self-signed certificate for 127.0.0.1 that is its own authority (the client's --ca-file / --cacert), and its
    key, made with openssl under `prefix`: (certificate path, key path)."""
    certificate, key = prefix / "origin-cert.pem", prefix / "origin-key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-addext", "basicConstraints=critical,CA:TRUE", "-keyout", str(key), "-out", str(certificate)],
                   check=True, capture_output=True)
    return certificate, key


def start_nginx(root, port, prefix, tls_port=None, http2=True):
    """nginx serving `root` over http on `port` and, with `tls_port`, over https there too (HTTP/2 offered by ALPN, as
    CDNs and object stores offer it, unless `http2` is false), with make_certificate's certificate."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    (prefix / "logs").mkdir(parents=True, exist_ok=True)
    tls = ""
    if tls_port:
        certificate, key = make_certificate(prefix)
        tls = (f"server {{ listen 127.0.0.1:{tls_port} ssl{' http2' if http2 else ''}; ssl_certificate {certificate}; "
               f"ssl_certificate_key {key}; ssl_session_cache shared:tls:10m; root {root}; location / {{ }} }}")
    config = prefix / "nginx.conf"
    config.write_text(f"""
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log {prefix}/logs/access.log;
    client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
    sendfile on; tcp_nopush on; tcp_nodelay on;
    keepalive_timeout 60; keepalive_requests 1000000;
    default_type application/octet-stream;
    server {{ listen 127.0.0.1:{port}; root {root}; location / {{ }} }}
    {tls}
}}
""")
    process = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(config), "-g", "daemon off;"])
    for _ in range(100):
        try:
            with socket.create_connection(("127.0.0.1", tls_port or port), timeout=0.1):
                return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("nginx did not start")


def run_child(command):
    """Runs `command`, returns its JSON line plus wall seconds and its own CPU seconds (from wait4)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{command[0]} failed with status {status}")
    process.returncode = 0
    result = json.loads(output) if output.strip().startswith(b"{") else {}
    result.setdefault("seconds", wall)
    result["cpu_seconds"] = usage.ru_utime + usage.ru_stime
    return result


def main():
    python = ensure_peers()
    binary = build("download-benchmark")
    root, files = content()
    port = free_port()
    prefix = Path(tempfile.mkdtemp(prefix="osprey-nginx-"))
    server = start_nginx(root, port, prefix)
    try:
        base = f"http://127.0.0.1:{port}/"
        urls = [base + files[i % len(files)] for i in range(DOWNLOADS)]
        random.Random(11).shuffle(urls)
        url_file = prefix / "urls.txt"
        url_file.write_text("\n".join(urls) + "\n")
        curl_config = prefix / "curl.txt"
        curl_config.write_text("".join(f'url = "{u}"\noutput = "/dev/null"\n' for u in urls))
        script = prefix / "aiohttp_client.py"
        script.write_text(AIOHTTP_CLIENT)
        total_bytes = sum((root / f).stat().st_size for f in (u[len(base):] for u in urls))
        print(f"{DOWNLOADS} downloads of {len(files)} files, {total_bytes / 1e6:.1f} MB in all, from nginx at {base}")

        clients = {
            "osprey": lambda n: [str(binary), "osprey", str(n), str(url_file)],
            "urlsession": lambda n: [str(binary), "urlsession", str(n), str(url_file)],
            "aiohttp": lambda n: [str(python), str(script), str(n), str(url_file)],
            "curl": lambda n: ["curl", "-s", "--parallel", "--parallel-max", str(n), "-K", str(curl_config)],
        }
        # Warm up nginx's file cache and each client's first-run costs.
        for name, command in clients.items():
            run_child(command(6))
        best = {}
        for _ in range(ROUNDS):
            for concurrency in CONCURRENCIES:
                for name, command in clients.items():
                    result = run_child(command(concurrency))
                    if result.get("failures", 0):
                        raise SystemExit(f"{name} had {result['failures']} failed downloads")
                    key = (name, concurrency)
                    if key not in best or result["seconds"] < best[key]["seconds"]:
                        best[key] = result

        failures = []
        for concurrency in CONCURRENCIES:
            print(f"\nconcurrency {concurrency}:")
            print(f"  {'client':<11} {'req/s':>9} {'MB/s':>8} {'CPU s/GB':>9} {'Osprey is':>10}")
            ours = DOWNLOADS / best[("osprey", concurrency)]["seconds"]
            for name in clients:
                result = best[(name, concurrency)]
                rate = DOWNLOADS / result["seconds"]
                cpu_per_gb = result["cpu_seconds"] / (total_bytes / 1e9)
                ratio = "" if name == "osprey" else f"{ours / rate:.2f}x"
                print(f"  {name:<11} {rate:>9.0f} {total_bytes / 1e6 / result['seconds']:>8.1f} {cpu_per_gb:>9.1f}"
                      f" {ratio:>10}")
            for name, target in (("urlsession", 2.0), ("aiohttp", 1.0), ("curl", 0.8)):
                ratio = ours / (DOWNLOADS / best[(name, concurrency)]["seconds"])
                verdict = "PASS" if record("downloads", f"vs {name} at {concurrency}", ratio, target) else "FAIL"
                if verdict == "FAIL":
                    failures.append(f"{name} at {concurrency}")
                print(f"  target >= {target}x {name}: {ratio:.2f}x {verdict}")

        # Coalescing: 1,000 concurrent requests for one URL, counted in nginx's access log.
        one = files[len(files) // 2]
        log = prefix / "logs" / "access.log"
        before = sum(1 for line in log.open() if f"GET /{one} " in line)
        result = run_child([str(binary), "coalesce", "1000", base + one])
        after = sum(1 for line in log.open() if f"GET /{one} " in line)
        verdict = "PASS" if after - before == 1 and result.get("failures", 1) == 0 else "FAIL"
        if verdict == "FAIL":
            failures.append("coalescing")
        print(f"\n1,000 concurrent requests for one URL: {after - before} origin request(s), "
              f"{result.get('failures')} failures, {result['seconds'] * 1000:.1f} ms {verdict}")
        if failures:
            print("targets missed: " + ", ".join(failures))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(prefix, ignore_errors=True)


if __name__ == "__main__":
    main()
