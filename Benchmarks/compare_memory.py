#!/usr/bin/env python3
"""osprey serve's memory budget under a burst of large images (release build): 64 concurrent requests for 64 distinct
7000 x 7000 (49 MP) PNGs served by nginx, each asked for at w=800, against one osprey serve with a 1 GiB budget
(--max-memory 1G), then against one with no effective budget (--max-memory 1T), each from a cold cache.

Prints, for each run, the idle RSS (after start), the peak RSS (VmHWM), the answers by status, latency percentiles of
the 200s, and whether the process is alive afterwards; then checks what the hardening issue targets for the budgeted
run: peak RSS <= budget + idle RSS + 15% of the budget, every answer 200 or 503, the process alive.
"""
import os, shutil, subprocess, sys, tempfile, threading, time, urllib.error, urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import apt_install, build_osprey, venv_python  # noqa: E402
from compare_downloads import free_port, start_nginx  # noqa: E402
from compare_proxy import wait_port  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
IMAGES = 64
SIDE = 7000
BUDGET = 1 << 30
CACHE = ROOT / "Benchmarks" / ".cache" / "memory"


def make_images(python):
    """64 distinct 49 MP PNGs (gradients that compress to a few MB; each with its own colour), made once."""
    CACHE.mkdir(parents=True, exist_ok=True)
    if len(list(CACHE.glob("*.png"))) == IMAGES:
        return
    subprocess.run([python, "-c", f"""
import sys
from PIL import Image
side = {SIDE}
x = Image.linear_gradient("L").resize((side, side))
y = x.transpose(Image.Transpose.ROTATE_90)
for i in range({IMAGES}):
    blue = Image.new("L", (side, side), (i * 4) % 256)
    Image.merge("RGB", (x, y, blue)).save(sys.argv[1] + f"/{{i}}.png", compress_level=1)
""", str(CACHE)], check=True)


def status_field(pid, name):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1]) * 1024
    return 0


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def run(osprey, origin, max_memory, work):
    port = free_port()
    env = dict(os.environ, OSPREY_CACHE_DIR=str(work / f"cache-{max_memory}"))
    server = subprocess.Popen([str(osprey), "serve", "--port", str(port), "--allow-unsigned",
                               "--allow-private-networks", "--max-memory", max_memory],
                              env=env, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, server)
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health").read()
        idle = status_field(server.pid, "VmRSS")
        results = [None] * IMAGES
        start = threading.Barrier(IMAGES)

        def ask(i):
            url = f"http://127.0.0.1:{port}/img?url={origin}/{i}.png&w=800&format=jpeg"
            start.wait()
            began = time.monotonic()
            try:
                with urllib.request.urlopen(url, timeout=300) as response:
                    response.read()
                    status = response.status
            except urllib.error.HTTPError as error:
                status = error.code
            except OSError as error:
                status = f"failed: {error}"
            results[i] = (status, time.monotonic() - began)

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(IMAGES)]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - began
        alive = server.poll() is None
        peak = status_field(server.pid, "VmHWM") if alive else 0
        if alive:
            alive = urllib.request.urlopen(f"http://127.0.0.1:{port}/health").status == 200
        return idle, peak, results, wall, alive
    finally:
        server.terminate()
        server.wait()


def main():
    apt_install(["nginx"])
    python = str(venv_python(["PIL"], ["Pillow"]))
    make_images(python)
    osprey = build_osprey()
    work = Path(tempfile.mkdtemp(prefix="osprey-memory-bench-"))
    work.chmod(0o755)
    nginx = None
    try:
        nginx_port = free_port()
        nginx = start_nginx(CACHE, nginx_port, work / "nginx")
        origin = f"http://127.0.0.1:{nginx_port}"
        mib = 1 << 20
        print(f"{IMAGES} concurrent requests, {IMAGES} distinct {SIDE}x{SIDE} PNGs (49 MP), w=800, cold cache")
        print(f"{'run':<22} {'idle RSS':>9} {'peak RSS':>9} {'200':>4} {'503':>4} {'other':>5} {'p50 s':>6} "
              f"{'p99 s':>6} {'wall s':>7} alive")
        budgeted = None
        for name, max_memory in [("budget 1 GiB", "1G"), ("no budget (1 TiB)", "1T")]:
            idle, peak, results, wall, alive = run(osprey, origin, max_memory, work)
            statuses = [status for status, _ in results]
            ok = [seconds for status, seconds in results if status == 200]
            other = [status for status in statuses if status not in (200, 503)]
            print(f"{name:<22} {idle / mib:>7.0f}MB {peak / mib:>7.0f}MB {statuses.count(200):>4} "
                  f"{statuses.count(503):>4} {len(other):>5} {percentile(ok, 0.5):>6.1f} {percentile(ok, 0.99):>6.1f} "
                  f"{wall:>7.1f} {'yes' if alive else 'NO'}")
            if other:
                print(f"    other answers: {other[:5]}")
            if budgeted is None:
                budgeted = (idle, peak, other, alive)
        idle, peak, other, alive = budgeted
        bound = BUDGET + idle + 0.15 * BUDGET
        verdict = peak <= bound and not other and alive
        print(f"budgeted peak {peak / mib:.0f} MB <= {BUDGET / mib:.0f} + {idle / mib:.0f} + 15% = {bound / mib:.0f} MB, "
              f"every answer 200 or 503, alive: {'PASS' if verdict else 'FAIL'}")
    finally:
        if nginx:
            nginx.terminate()
            nginx.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
