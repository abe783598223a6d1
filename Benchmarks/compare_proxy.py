#!/usr/bin/env python3
"""osprey serve beside thumbor (from PyPI, 2 processes, result storage on) on the same nginx origin, driven by wrk on
127.0.0.1, in one run. Release build. Prints requests/s, p99 latency and the ratios issue 9 targets:

- hot (one rendered URL asked again and again): osprey >= 10x thumbor, and >= 0.3x nginx serving the same bytes as
  a static file;
- cold (every request a new source: 1920x1080 JPEG -> 256 px): osprey >= 1.5x thumbor, and osprey's CPU time per
  request within 1.3x of libjpeg-turbo's own scaled decode of the same source (`djpeg -scale 1/4`, the floor);
- p99 latency below thumbor's in both.
"""
import os, re, shutil, subprocess, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import apt_install, build_osprey, venv_python  # noqa: E402
from compare_downloads import free_port, start_nginx  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DURATION = int(os.environ.get("PROXY_BENCH_SECONDS", "8"))
CONNECTIONS = 32
SOURCES = 20000  # distinct source URLs for the cold run (symlinks to one file): more than any run asks for


def wait_port(port, process, seconds=30):
    import socket
    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server on {port} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


def cpu_seconds(pids):
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def process_tree(pid):
    pids = [pid]
    for child in Path("/proc").iterdir():
        if child.name.isdigit():
            try:
                if int((child / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    pids += process_tree(int(child.name))
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass
    return pids


def wrk(url, script=None, duration=DURATION):
    command = ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{duration}s", "--latency"]
    if script:
        command += ["-s", str(script)]
    output = subprocess.run(command + [url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    requests = int(re.search(r"(\d+) requests in", output).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", output)
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}[p99.group(2)]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return rps, float(p99.group(1)) * scale, requests, int(non2xx.group(1)) if non2xx else 0


def cold_script(directory, template):
    """A wrk script asking for source 0, 1, 2, ... in turn (each thread its own range): every request a new source."""
    script = directory / "cold.lua"
    script.write_text(f"""
local counter = 0
local offset = 0
local threads = 0
function setup(thread) thread:set("offset", threads * {SOURCES // 2}); threads = threads + 1 end
function request()
  counter = counter + 1
  local path = string.format("{template}", offset + counter)
  return wrk.format("GET", path)
end
""")
    return script


def main():
    apt_install(["wrk", "nginx", "libjpeg-turbo-progs"])
    python = str(venv_python(["PIL", "thumbor"], ["Pillow", "thumbor"]))
    thumbor = Path(python).parent / "thumbor"
    osprey = build_osprey()

    work = Path(tempfile.mkdtemp(prefix="osprey-proxy-bench-"))
    work.chmod(0o755)  # nginx's workers run unprivileged when it is started as root
    processes = []
    try:
        root = work / "origin"
        (root / "s").mkdir(parents=True)
        subprocess.run([python, "-c", """
import sys
from PIL import Image
w, h = 1920, 1080
image = Image.merge("RGB", (Image.linear_gradient("L").resize((w, h)), Image.effect_noise((w, h), 60).convert("L"),
                            Image.radial_gradient("L").resize((w, h))))
image.save(sys.argv[1], quality=85)
""", str(root / "photo.jpg")], check=True)
        for i in range(SOURCES):
            os.symlink(root / "photo.jpg", root / "s" / f"{i}.jpg")
        nginx_port = free_port()
        processes.append(start_nginx(root, nginx_port, work / "nginx"))

        osprey_port = free_port()
        env = dict(os.environ, OSPREY_CACHE_DIR=str(work / "osprey-cache"))
        server = subprocess.Popen([str(osprey), "serve", "--port", str(osprey_port), "--allow-unsigned",
                                   "--allow-private-networks", "--log-level", "warning", "--max-in-flight", "1024"],
                                  env=env, stderr=subprocess.DEVNULL)
        processes.append(server)
        wait_port(osprey_port, server)

        thumbor_port = free_port()
        conf = work / "thumbor.conf"
        conf.write_text(f"""
ALLOW_UNSAFE_URL = True
LOADER = 'thumbor.loaders.http_loader'
STORAGE = 'thumbor.storages.file_storage'
FILE_STORAGE_ROOT_PATH = '{work}/thumbor-storage'
RESULT_STORAGE = 'thumbor.result_storages.file_storage'
RESULT_STORAGE_FILE_STORAGE_ROOT_PATH = '{work}/thumbor-results'
RESULT_STORAGE_STORES_UNSAFE = True
QUALITY = 80
HTTP_LOADER_MAX_CLIENTS = 64
""")
        thumbor_process = subprocess.Popen([str(thumbor), "--port", str(thumbor_port), "--conf", str(conf),
                                            "--processes", "2", "-l", "error"],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append(thumbor_process)
        wait_port(thumbor_port, thumbor_process)

        origin = f"http://127.0.0.1:{nginx_port}"
        hot_osprey = f"http://127.0.0.1:{osprey_port}/img?url={origin}/photo.jpg&w=256&format=jpeg"
        hot_thumbor = f"http://127.0.0.1:{thumbor_port}/unsafe/fit-in/256x256/{origin}/photo.jpg"
        # Render once each, and put osprey's bytes where nginx serves them as a static file.
        import urllib.request
        rendered = urllib.request.urlopen(hot_osprey).read()
        urllib.request.urlopen(hot_thumbor).read()
        (root / "rendered.jpg").write_bytes(rendered)

        print(f"hot: one rendered URL ({len(rendered)} bytes), wrk -t2 -c{CONNECTIONS} -d{DURATION}s")
        hot = {}
        for name, url in [("osprey", hot_osprey), ("thumbor", hot_thumbor),
                          ("nginx static", f"{origin}/rendered.jpg")]:
            hot[name] = wrk(url)
            rps, p99, _, errors = hot[name]
            print(f"  {name:13} {rps:10.0f} req/s  p99 {p99:8.2f} ms  non-2xx {errors}")

        print(f"cold: every request a new 1920x1080 JPEG source -> 256 px, wrk -t2 -c{CONNECTIONS} -d{DURATION}s")
        cold = {}
        pids = {"osprey": process_tree(server.pid), "thumbor": process_tree(thumbor_process.pid)}
        for name, template in [
            ("osprey", f"/img?url={origin}/s/%d.jpg&w=256&h=256&format=jpeg"),
            ("thumbor", f"/unsafe/fit-in/256x256/{origin}/s/%d.jpg"),
        ]:
            port = osprey_port if name == "osprey" else thumbor_port
            before = cpu_seconds(pids[name])
            rps, p99, requests, errors = wrk(f"http://127.0.0.1:{port}/", cold_script(work, template))
            cpu = cpu_seconds(pids[name]) - before
            cold[name] = (rps, p99, requests, errors, cpu / max(requests, 1))
            print(f"  {name:13} {rps:10.0f} req/s  p99 {p99:8.2f} ms  non-2xx {errors}  "
                  f"CPU {cold[name][4] * 1e3:.2f} ms/request")

        # The floor: libjpeg-turbo's own scaled decode of the same source, CPU time per image.
        runs = 200
        start = os.times()
        for _ in range(runs):
            subprocess.run(["djpeg", "-scale", "1/4", "-outfile", os.devnull, str(root / "photo.jpg")], check=True)
        end = os.times()
        whole = (end.children_user + end.children_system - start.children_user - start.children_system) / runs
        # A process's start and exit are not decoding: measured on an 8 x 8 JPEG, and taken off.
        subprocess.run([python, "-c", "import sys; from PIL import Image; Image.new('RGB', (8, 8)).save(sys.argv[1])",
                        str(work / "tiny.jpg")], check=True)
        start = os.times()
        for _ in range(runs):
            subprocess.run(["djpeg", "-scale", "1/4", "-outfile", os.devnull, str(work / "tiny.jpg")], check=True)
        end = os.times()
        overhead = (end.children_user + end.children_system - start.children_user - start.children_system) / runs
        djpeg = whole - overhead
        print(f"  djpeg -scale 1/4: {djpeg * 1e3:.2f} ms CPU per image ({whole * 1e3:.2f} minus a process's "
              f"{overhead * 1e3:.2f})")

        checks = [
            ("hot vs thumbor", hot["osprey"][0] / hot["thumbor"][0], 10.0),
            ("hot vs nginx static", hot["osprey"][0] / hot["nginx static"][0], 0.3),
            ("cold vs thumbor", cold["osprey"][0] / cold["thumbor"][0], 1.5),
            ("cold CPU vs djpeg (lower is better)", djpeg * 1.3 / cold["osprey"][4], 1.0),
            ("hot p99 below thumbor's", hot["thumbor"][1] / hot["osprey"][1], 1.0),
            ("cold p99 below thumbor's", cold["thumbor"][1] / cold["osprey"][1], 1.0),
        ]
        print("ratios (target):")
        failed = 0
        for name, ratio, target in checks:
            ok = ratio >= target
            failed += not ok
            print(f"  {name:38} {ratio:8.2f}  (>= {target})  {'PASS' if ok else 'FAIL'}")
        print("targets:", "PASS" if not failed else f"FAIL ({failed})")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
