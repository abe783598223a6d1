#!/usr/bin/env python3
"""osprey serve beside thumbor as thumbor's users deploy it, on the same nginx origin, driven by wrk on 127.0.0.1,
in one run. Release build. Prints requests/s, p99 latency, CPU per request and the ratios the one-pipeline issue
targets; beside a count of answers other than 2xx, the first ten of each wrk thread, with their status and the start
of their body (which says why).

thumbor (from PyPI, file storage and result storage on) runs in its documented production layout: two
single-process instances behind nginx (`least_conn`, keep-alive to the upstreams) — not `--processes 2`, whose
first child takes every keep-alive connection. osprey runs as one process (it uses every core itself). Both servers'
caches and storage are on an ext4 made for the run, journaled as a server's disk is (run as root; PROXY_DISK_DIR
names another directory), not on the machine's root filesystem (benchkit.scratch_filesystem says why).

Phases (sources are photos made from the corpus's 4032x3024 photo, or a generated picture without the corpus):
- hot: one rendered URL asked again and again (1920x1080 -> 256 px). Beside nginx serving the same bytes.
- cold, for 640x480, 1920x1080 and 4000x3000 sources: every request a new source -> fit 256x256 JPEG. Targets:
  osprey >= 1.8x thumbor at 1920x1080 and >= 1.5x at 4000x3000; CPU per cold request <= 1.25x the in-process
  thumbnail job's (processor-benchmark: decode scaled, fit 256x256, JPEG q80, one thread) on the same source.
- many variants: each source asked in 30 variants (15 sizes x JPEG/WebP) at once, source after source (1920x1080).
  Target: osprey >= 3x thumbor. Beside it, the 30 encodes alone (processor-benchmark variants: one thread, no server)
  give the CPU floor of a request, and so the highest ratio any server could reach over each peer's CPU per request;
  and the floor of the work itself: those encodes, one decode scaled for the largest variant and the 15 resizes from
  it, which no server can do with less of. With OSPREY_BEFORE=<an older osprey binary>, the hot, cold 1920x1080 and many-variants
  phases also run against it (one at a time), for the "before" ratios (many variants >= 3x, hot within 5%).
- AVIF, cold: a 1920x1080 AVIF source (avifenc, as compare_modern.py makes it) -> fit 256x256 JPEG, and the 1920x1080
  JPEG source -> fit 800x800 AVIF (quality 80, speed 8 on both: thumbor's AVIF_SPEED set to osprey's default).
  Target: osprey >= 1.0x thumbor (Pillow 12's AVIF, libavif with aom and dav1d) in both.
- features, cold: a 1920x1080 source cropped (1600x900 region), resized to 320x180 at dpr=2 (640x360 out) and
  watermarked (a 200x60 PNG logo at 60 % opacity, 10 px in from the bottom right): osprey's crop, dpr and wm beside
  thumbor's manual crop, size and watermark() filter. Target (the proxy-features issue): osprey >= 3x thumbor.
- thumbor URL mix (the drop-in issue): thumbor's URLs (crop 300x200, fit-in 400x400, 200x300 at quality 70, fit-in
  300x300 as WebP, 150x150 grayscale, in turn) sent to osprey's thumbor endpoint (--thumbor-path /thumbor) and to
  thumbor: hot (one source's five URLs again and again) and cold (every request a new 1920x1080 source). Targets:
  osprey >= 10x thumbor hot and >= 1.8x cold; the in-process thumbnail job's CPU is printed beside as the floor.
- p99 below thumbor's in every phase; every cold phase's origin sees each source once (its access log counted).

- info (the ask-the-image issue): cold /info (with its placeholders) on 4000x3000 JPEGs beside thumbor's meta/ on the
  same photo, and osprey's cold /img?w=64. Targets: >= 5x thumbor's meta/, and within 1.3x of /img?w=64 (the decode
  is the cost, not the hashes).

- cold over https (the one-client issue): the cold phase's 1920x1080 and 4000x3000 sources fetched from the same
  nginx over https (HTTP/2 offered, as CDNs offer it; both servers ask in HTTP/1.1, osprey by default and thumbor's
  HTTP client always; a certificate of an authority the script makes, which osprey gets with --ca-file and thumbor
  with HTTP_LOADER_CA_CERTS). Osprey runs four times, over http, https, https and http in turn, each run on sources
  of its own, beside the origin nginx's CPU per request; then thumbor over https. Targets: osprey (the mean of its
  two https runs) >= 1.8x and >= 1.5x thumbor over https, and >= 0.9x its own throughput over http in the runs
  beside (the ratio of the means, in which a drift through the four runs cancels). Then the four runs again with
  osprey alone on one CPU and the origin and wrk on the other, as when the origin is another machine: that ratio
  is printed beside, not a target.
- input kinds over https: the same, for a 1920x1080 and a 4000x3000 JPEG made four ways from the photo (4:2:0 q85,
  4:4:4 q95, progressive 4:2:0 q85, and the photo half-blended with noise at 4:2:0 q85): the ratio per kind, against
  the same targets, osprey in turns over http and https as in the phase above, so that a reader sees where osprey's
  lead is large and where it is small; beside each, the floor: the same work in-process (processor-benchmark
  thumbnail), and thumbor's CPU per request over it, the most osprey's lead can be on this CPU-bound machine; and,
  beside what osprey spends beyond that floor, what both servers also do for a cold source, fetch it over https and
  store it, as curl costs it (HTTP/1.1, 16 at once, each source written to a file).

- quality: cold requests of the 1920x1080 photo fit inside 256 and 800 px as WebP, at q=79 and at q=auto (the default
  target, 70): osprey's CPU per request for each, and their ratio (target: q=auto at most 2.0x the fixed quality's).

PROXY_BENCH_PHASES=hot,cold,https,kinds,avif,quality,features,variants,mix,info runs some phases only (all by
default); PROXY_BENCH_KINDS=420q85,444q95,progressive,noise some input kinds only; PROXY_BENCH_PERF=DIR records a
`perf` profile of each of osprey's runs there. Every run's CPU per request is split into user and system time.
"""
import os, re, shutil, subprocess, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import apt_install, build, build_osprey, record, scratch_filesystem, venv_python  # noqa: E402
from compare_downloads import free_port, run_child, start_nginx  # noqa: E402
from compare_modern import modern_source  # noqa: E402
from compare_processors import DATA, MAKE_INPUTS, corpus_photo  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DURATION = int(os.environ.get("PROXY_BENCH_SECONDS", "8"))
HOT_CONNECTIONS = 32
CONNECTIONS = 16
SOURCES = 20000  # distinct source URLs per size (symlinks to one file): more than any run asks for
SIZES = ((640, 480), (1920, 1080), (4000, 3000))
# The https phase's runs of osprey, in this order: a drift that goes one way through the four runs cancels in the
# ratio of the sums (one process asked the same cold phase eight times in a row: 534, 531, 519, 520, 511, 506, 515,
# 514 requests/s, its first runs the fastest).
SCHEME_TURNS = ("http", "https", "https", "http")
# And the same four runs again with osprey alone on one CPU and the origin and wrk on the others, as when the origin
# is another machine (PROXY_BENCH_ORIGIN_APART=0 leaves them out): on this machine the origin's encryption otherwise
# runs on the CPUs osprey's throughput is measured on, and sendfile spares it that over http.
ORIGIN_APART = os.environ.get("PROXY_BENCH_ORIGIN_APART", "1") != "0"
# A directory to record a `perf` profile of osprey in, one file for each of its runs (numbered in order, named after
# the run), for a look at where a phase's CPU goes; the figures are then those of a profiled server.
PROFILES = os.environ.get("PROXY_BENCH_PERF")
if PROFILES and not shutil.which("perf"):
    raise SystemExit("PROXY_BENCH_PERF: no perf on PATH (Debian's linux-perf)")
VARIANT_WIDTHS = list(range(64, 64 + 15 * 48, 48))  # 15 sizes
VARIANT_FORMATS = ("jpeg", "webp")
QUALITY_SIZES = (256, 800)  # the quality phase's output sizes
PHASES = set(os.environ.get("PROXY_BENCH_PHASES",
                            "hot,cold,https,kinds,avif,quality,features,variants,mix,info").split(","))
# The input kinds of the cold phase over https: how a JPEG was made changes what decoding it costs.
KINDS = {"420q85": "4:2:0 q85", "444q95": "4:4:4 q95", "progressive": "progressive 4:2:0 q85",
         "noise": "noisy synthetic 4:2:0 q85"}
if os.environ.get("PROXY_BENCH_KINDS"):  # some kinds only (comma-separated keys of KINDS), to look at one closely
    unknown = set(os.environ["PROXY_BENCH_KINDS"].split(",")) - set(KINDS)
    if unknown:
        raise SystemExit(f"PROXY_BENCH_KINDS: no kind {', '.join(sorted(unknown))} (the kinds: {', '.join(KINDS)})")
    KINDS = {kind: KINDS[kind] for kind in os.environ["PROXY_BENCH_KINDS"].split(",")}
MAKE_KINDS = """
import sys, random
from PIL import Image
data, out = sys.argv[1], sys.argv[2]
for w, h in ((1920, 1080), (4000, 3000)):
    photo = Image.open(f"{data}/photo-{w}x{h}.png").convert("RGB")
    photo.save(f"{out}/420q85-{w}.jpg", quality=85, subsampling=2)
    photo.save(f"{out}/444q95-{w}.jpg", quality=95, subsampling=0)
    photo.save(f"{out}/progressive-{w}.jpg", quality=85, subsampling=2, progressive=True)
    # Noise over the photo: entropy decoding, not the picture, dominates.
    noise = Image.merge("RGB", [Image.effect_noise((w, h), 64) for _ in range(3)])
    Image.blend(photo, noise, 0.5).save(f"{out}/noise-{w}.jpg", quality=85, subsampling=2)
"""
# The thumbor URL mix: what thumbor's users ask most, in turn.
THUMBOR_MIX = ["300x200/", "fit-in/400x400/", "200x300/filters:quality(70)/", "fit-in/300x300/filters:format(webp)/",
               "150x150/filters:grayscale()/"]


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


def stat_fields(pid):
    """The fields of /proc/`pid`/stat after the command's name (state, ppid, ...: field 3 of proc(5) is [0])."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_split(pids):
    """The user and the system CPU seconds `pids` have used."""
    user = system = 0.0
    for pid in pids:
        try:
            fields = stat_fields(pid)
            user += int(fields[11]) / os.sysconf("SC_CLK_TCK")
            system += int(fields[12]) / os.sysconf("SC_CLK_TCK")
        except (FileNotFoundError, ProcessLookupError):
            pass
    return user, system


def cpu_seconds(pids):
    return sum(cpu_split(pids))


def wrk(url, script=None, connections=CONNECTIONS, duration=DURATION):
    command = ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency"]
    if script:
        command += ["-s", str(script)]
    output = subprocess.run(command + [url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    requests = int(re.search(r"(\d+) requests in", output).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", output)
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}[p99.group(2)]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    for line in output.splitlines():
        if line.startswith("non-2xx: "):
            print(f"  {line}", flush=True)
    return rps, float(p99.group(1)) * scale, requests, int(non2xx.group(1)) if non2xx else 0


def lua_script(directory, name, body):
    """A wrk script whose threads each take their own range of sources; `body` returns the path for counter n."""
    script = directory / f"{name}.lua"
    # `offset` is each thread's global, set by setup() through thread:set: a `local offset` here would shadow it, and
    # both threads would walk sources 0, 1, 2, ... together (every cold source asked twice at once).
    # Each thread keeps its first ten answers other than 2xx (status and the start of the body, which says why) in the
    # global `failed`, which done() prints after wrk's summary: a non-2xx count with its reasons.
    script.write_text(f"""
local counter = 0
local threads = 0
local all = {{}}
failed = ""
local failures = 0
function setup(thread)
  thread:set("offset", threads * {SOURCES // 2}); threads = threads + 1; table.insert(all, thread)
end
function request()
  counter = counter + 1
  local n = counter
{body}
  return wrk.format("GET", path)
end
function response(status, headers, body)
  if status >= 300 and failures < 10 then
    failures = failures + 1
    failed = failed .. "non-2xx: " .. status .. " " .. string.gsub(string.sub(body or "", 1, 200), "%s+", " ") .. "\\n"
  end
end
function done(summary, latency, requests)
  for _, thread in ipairs(all) do io.write(thread:get("failed") or "") end
end
""")
    return script


def cold_script(directory, name, template):
    """Source 0, 1, 2, ... in turn: every request a new source."""
    return lua_script(directory, name, f'  local path = string.format("{template}", offset + n)')


def variants_script(directory, name, template):
    """Thirty variants of source 0, then of source 1, ...: each thread's connections ask for one source's variants
    at once. `template` names them SOURCE, WIDTH (for the width and the height) and FORMAT."""
    widths = "{" + ",".join(map(str, VARIANT_WIDTHS)) + "}"
    formats = "{" + ",".join(f'"{f}"' for f in VARIANT_FORMATS) + "}"
    count = len(VARIANT_WIDTHS) * len(VARIANT_FORMATS)
    return lua_script(directory, name, f"""  local widths = {widths}
  local formats = {formats}
  local source = offset + math.floor((n - 1) / {count})
  local variant = (n - 1) % {count}
  local width = widths[math.floor(variant / {len(VARIANT_FORMATS)}) + 1]
  local format = formats[variant % {len(VARIANT_FORMATS)} + 1]
  local path = ("{template}"):gsub("SOURCE", tostring(source)):gsub("WIDTH", tostring(width)):gsub("FORMAT", format)""")


def start_thumbor_fleet(thumbor, conf, work, instances=2):
    """Single-process thumbors behind nginx (least_conn, keep-alive): thumbor's documented production layout."""
    processes, ports = [], []
    for _ in range(instances):
        port = free_port()
        process = subprocess.Popen([str(thumbor), "--port", str(port), "--conf", str(conf), "-l", "error"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append(process)
        wait_port(port, process)
        ports.append(port)
    front = free_port()
    prefix = work / "thumbor-nginx"
    (prefix / "logs").mkdir(parents=True, exist_ok=True)
    upstreams = "".join(f"server 127.0.0.1:{port};" for port in ports)
    (prefix / "nginx.conf").write_text(f"""
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
    keepalive_timeout 60; keepalive_requests 1000000;
    upstream thumbors {{ least_conn; {upstreams} keepalive 64; }}
    server {{
        listen 127.0.0.1:{front};
        location / {{
            proxy_pass http://thumbors; proxy_http_version 1.1; proxy_set_header Connection "";
            proxy_read_timeout 120s;
        }}
    }}
}}
""")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    front_process = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g", "daemon off;"])
    processes.append(front_process)
    wait_port(front, front_process)
    return front, processes


def curl_fetch_cost(base, count, authority, directory, rounds=3):
    """The CPU a source costs curl to fetch over https (HTTP/1.1, 16 at once) and write to a file of its own, in ms:
    the least of `rounds` runs over `count` sources named from the top of the source numbers, which no phase asks."""
    config = directory.parent / "curl-fetch.txt"
    config.write_text("".join(f'url = "{base}/{SOURCES - 1 - i}.jpg"\noutput = "{i}"\n' for i in range(count)))
    best = float("inf")
    for _ in range(rounds):
        shutil.rmtree(directory, ignore_errors=True)
        result = run_child(["curl", "-s", "--http1.1", "--cacert", str(authority), "--parallel", "--parallel-max",
                            str(CONNECTIONS), "--create-dirs", "--output-dir", str(directory), "-K", str(config)])
        best = min(best, result["cpu_seconds"] / count * 1e3)
    shutil.rmtree(directory, ignore_errors=True)
    return best


def start_osprey(binary, cache, port, arguments=()):
    env = dict(os.environ, OSPREY_CACHE_DIR=str(cache))
    process = subprocess.Popen([str(binary), "serve", "--port", str(port), "--allow-unsigned",
                                "--allow-private-networks", "--log-level", "warning", "--max-in-flight", "1024",
                                *arguments],
                               env=env, stderr=subprocess.DEVNULL)
    wait_port(port, process)
    return process


ORIGIN_LOG = None  # the origin nginx's access log, set by main()


def origin_requests(since):
    """The origin's request paths logged after byte `since` of its access log, and the log's size now."""
    data = ORIGIN_LOG.read_bytes() if ORIGIN_LOG and ORIGIN_LOG.exists() else b""
    paths = [line.split(b'"')[1].split(b" ")[1] for line in data[since:].splitlines() if line.count(b'"') >= 2]
    return paths, len(data)


def worker_pids(process):
    """`process` and its children (nginx's workers)."""
    pids = [process.pid]
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int(stat_fields(entry.name)[1]) == process.pid:
                pids.append(int(entry.name))
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass
    return pids


def pin(pids, cpus):
    """Every thread of the processes `pids` on `cpus` (a thread started later takes its starter's)."""
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                os.sched_setaffinity(int(task.name), cpus)
            except (FileNotFoundError, ProcessLookupError):
                pass


def combined(runs):
    """Runs of one kind as one: throughput and CPU per request averaged, the worst p99, the counts added."""
    result = {key: sum(run[key] for run in runs) / len(runs)
              for key in ("rps", "cpu", "user", "system", "origin cpu") if key in runs[0]}
    result["p99"] = max(run["p99"] for run in runs)
    for key in ("requests", "errors", "repeated"):
        result[key] = sum(run.get(key, 0) for run in runs)
    return result


profiled_runs = 0


def measure(name, pids, url, script=None, connections=CONNECTIONS, cold=False):
    global profiled_runs
    profiler = None
    if PROFILES and name.startswith("osprey"):
        profiled_runs += 1
        Path(PROFILES).mkdir(parents=True, exist_ok=True)
        output = Path(PROFILES) / f"{profiled_runs:02}-{name.replace(' ', '-')}.data"
        profiler = subprocess.Popen(["perf", "record", "-F", "999", "-g", "-p", str(pids[0]), "-o", str(output)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    before = cpu_split(pids)
    _, log_start = origin_requests(0)
    rps, p99, requests, errors = wrk(url, script, connections)
    if profiler:
        profiler.send_signal(2)  # SIGINT: perf writes its file and exits
        profiler.wait()
    user, system = ((after - then) / max(requests, 1) for after, then in zip(cpu_split(pids), before))
    cpu = user + system
    print(f"  {name:16} {rps:9.0f} req/s  p99 {p99:8.2f} ms  non-2xx {errors:5}  CPU {cpu * 1e3:6.2f} ms/request "
          f"(user {user * 1e3:.2f}, system {system * 1e3:.2f})", flush=True)
    result = {"rps": rps, "p99": p99, "requests": requests, "errors": errors, "cpu": cpu, "user": user,
              "system": system}
    if cold:
        # A cold phase asks every source once: the origin must have seen each source path once, no source twice.
        paths, _ = origin_requests(log_start)
        # The features phase's watermark is an overlay thumbor fetches from the origin as it needs it (osprey reads
        # it from its --watermark file): not a source.
        overlays = sum(1 for path in paths if path.endswith(b"/wm.png"))
        paths = [path for path in paths if not path.endswith(b"/wm.png")]
        repeated = len(paths) - len(set(paths))
        print(f"  {'':16} origin: {len(paths)} requests for {len(set(paths))} sources, {repeated} repeated"
              + (f" (and {overlays} of the watermark)" if overlays else ""), flush=True)
        result["repeated"] = repeated
    return result


def main():
    # Both servers' caches (osprey's disk cache, thumbor's file storage and result storage) on a fresh journaled ext4,
    # as a server's disk is: not the machine's root filesystem, which has no journal and, after earlier runs deleted
    # their caches, made every file creation scan past the inodes deleted in the last minutes (recently_deleted: 60%
    # of osprey's file-writing thread in a profile of 2026-11-30).
    with scratch_filesystem("PROXY_DISK_DIR", size=64 << 30, direct_io=True) as (disk, description):
        print(f"caches and storage written under {disk}: {description}", flush=True)
        return run(disk)


def run(disk):
    apt_install(["wrk", "nginx"] + ([] if shutil.which("avifenc") else ["libavif-bin"]))
    python = str(venv_python(["PIL", "thumbor"], ["Pillow", "thumbor"]))
    thumbor = Path(python).parent / "thumbor"
    osprey = build_osprey()
    thumbnailer = build("processor-benchmark")
    before_binary = os.environ.get("OSPREY_BEFORE")
    DATA.mkdir(parents=True, exist_ok=True)
    if not (DATA / "photo-4000x3000.jpeg").exists():
        photo = corpus_photo()
        subprocess.run([python, "-c", MAKE_INPUTS, str(photo) if photo else "", str(DATA)], check=True)

    work = Path(tempfile.mkdtemp(prefix="osprey-proxy-bench-"))
    work.chmod(0o755)  # nginx's workers run unprivileged when it is started as root
    processes = []
    try:
        root = work / "origin"
        for w, h in SIZES:
            directory = root / f"s{w}"
            directory.mkdir(parents=True)
            shutil.copy(DATA / f"photo-{w}x{h}.jpeg", root / f"photo-{w}.jpg")
            for i in range(SOURCES):
                os.symlink(root / f"photo-{w}.jpg", directory / f"{i}.jpg")
        # The AVIF phases' sources, unseen by the other phases: the 1920x1080 photo as AVIF, and as JPEG again.
        shutil.copy(modern_source("avif", 1920, 1080, python), root / "photo-1920.avif")
        for directory, photo in (("a1920", "photo-1920.avif"), ("c1920", "photo-1920.jpg"), ("f1920", "photo-1920.jpg"),
                                 ("m1920", "photo-1920.jpg"), ("i4000", "photo-4000.jpg"), ("t4000", "photo-4000.jpg"),
                                 ("w4000", "photo-4000.jpg")):
            (root / directory).mkdir()
            for i in range(SOURCES):
                os.symlink(root / photo, root / directory / f"{i}{Path(photo).suffix}")
        # The quality phase's sources: the 1920x1080 photo, unseen, for each size and each of fixed and q=auto.
        for size in QUALITY_SIZES:
            for kind in ("fixed", "auto"):
                (root / f"q{kind}-{size}").mkdir()
                for i in range(SOURCES):
                    os.symlink(root / "photo-1920.jpg", root / f"q{kind}-{size}" / f"{i}.jpg")
        for name in ("v-osprey", "v-thumbor", "v-before"):
            (root / name).symlink_to(root / "s1920")
        def name_for_turns(directory):
            """The names of `directory` for the runs of osprey in turns over http and https (in_turns), one each."""
            for run in range(len(SCHEME_TURNS)):
                for name in ("turn", "apart"):
                    (root / f"{directory}-{name}{run}").symlink_to(root / directory)

        for w, _ in SIZES[1:]:
            name_for_turns(f"s{w}")
        # The features phase's watermark: a 200x60 logo, translucent, on a transparent ground.
        subprocess.run([python, "-c", "import sys\nfrom PIL import Image, ImageDraw\n"
                        "im = Image.new('RGBA', (200, 60), (0, 0, 0, 0)); d = ImageDraw.Draw(im)\n"
                        "d.rounded_rectangle((0, 0, 199, 59), 12, fill=(255, 255, 255, 200))\n"
                        "d.text((20, 20), 'osprey', fill=(20, 40, 120, 255)); im.save(sys.argv[1])",
                        str(root / "wm.png")], check=True)
        if "kinds" in PHASES:
            subprocess.run([python, "-c", MAKE_KINDS, str(DATA), str(root)], check=True)
            for kind in KINDS:
                for w in (1920, 4000):
                    (root / f"k{kind}-{w}").mkdir()
                    for i in range(SOURCES):
                        os.symlink(root / f"{kind}-{w}.jpg", root / f"k{kind}-{w}" / f"{i}.jpg")
                    name_for_turns(f"k{kind}-{w}")
        nginx_port, nginx_tls_port = free_port(), free_port()
        nginx = start_nginx(root, nginx_port, work / "nginx", tls_port=nginx_tls_port)
        processes.append(nginx)
        global ORIGIN_LOG
        ORIGIN_LOG = work / "nginx" / "logs" / "access.log"
        origin = f"http://127.0.0.1:{nginx_port}"
        # The same files over https, HTTP/2 offered (neither server takes it), with a certificate of the run's own
        # authority, which both servers are told to trust (osprey's --ca-file, thumbor's HTTP_LOADER_CA_CERTS).
        secure_origin = f"https://127.0.0.1:{nginx_tls_port}"
        authority = work / "nginx" / "origin-cert.pem"

        osprey_port = free_port()
        server = start_osprey(osprey, disk / "osprey-cache", osprey_port,
                              ["--watermark", str(root / "wm.png"), "--thumbor-path", "/thumbor",
                               "--ca-file", str(authority)])
        processes.append(server)

        conf = work / "thumbor.conf"
        conf.write_text(f"""
ALLOW_UNSAFE_URL = True
LOADER = 'thumbor.loaders.http_loader'
STORAGE = 'thumbor.storages.file_storage'
FILE_STORAGE_ROOT_PATH = '{disk}/thumbor-storage'
RESULT_STORAGE = 'thumbor.result_storages.file_storage'
RESULT_STORAGE_FILE_STORAGE_ROOT_PATH = '{disk}/thumbor-results'
RESULT_STORAGE_STORES_UNSAFE = True
AUTO_WEBP = False
QUALITY = 80
AVIF_SPEED = 8
HTTP_LOADER_MAX_CLIENTS = 64
HTTP_LOADER_VALIDATE_CERTS = True
HTTP_LOADER_CA_CERTS = '{authority}'
""")
        thumbor_port, fleet = start_thumbor_fleet(thumbor, conf, work)
        processes += fleet
        thumbor_pids = [process.pid for process in fleet]

        targets = {"osprey": (osprey_port, [server.pid]), "thumbor": (thumbor_port, thumbor_pids)}
        before = None
        if before_binary:
            before_port = free_port()
            before = start_osprey(before_binary, disk / "before-cache", before_port)
            processes.append(before)
            targets["before"] = (before_port, [before.pid])

        def osprey_path(source, width, height, form="jpeg", base=origin):
            return f"/img?url={base}/{source}&w={width}&h={height}&format={form}"

        def thumbor_path(source, width, height, form="jpeg", base=origin):
            return f"/unsafe/fit-in/{width}x{height}/filters:format({form})/{base}/{source}"

        import urllib.request
        results = {}
        if "hot" in PHASES:
            hot_paths = {"osprey": osprey_path("photo-1920.jpg", 256, 256),
                         "thumbor": thumbor_path("photo-1920.jpg", 256, 256)}
            hot_paths["before"] = hot_paths["osprey"]
            rendered = None
            for name, (port, _) in targets.items():
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}{hot_paths[name]}").read()
                rendered = rendered or body
            (root / "rendered.jpg").write_bytes(rendered)
            print(f"hot: one rendered URL ({len(rendered)} bytes), wrk -t2 -c{HOT_CONNECTIONS} -d{DURATION}s",
                  flush=True)
            for name, (port, pids) in targets.items():
                results["hot", name] = measure(name, pids, f"http://127.0.0.1:{port}{hot_paths[name]}",
                                               connections=HOT_CONNECTIONS)
            results["hot", "nginx"] = measure("nginx static", [], f"{origin}/rendered.jpg",
                                              connections=HOT_CONNECTIONS)

        thumbnail_ms = {}
        for w, h in SIZES:
            label = f"{w}x{h}"
            out = work / f"thumb-{w}.jpg"
            output = subprocess.run([str(thumbnailer), "thumbnail", str(root / f"photo-{w}.jpg"), "9", str(out)],
                                    check=True, capture_output=True, text=True).stdout
            thumbnail_ms[label] = float(re.search(r'"best":([\d.e-]+)', output).group(1)) * 1e3  # seconds
            if "cold" not in PHASES:
                continue
            print(f"cold {label} -> fit 256x256 JPEG, every request a new source, wrk -t2 -c{CONNECTIONS} "
                  f"-d{DURATION}s; in-process thumbnail job {thumbnail_ms[label]:.2f} ms CPU per image", flush=True)
            for name, (port, pids) in targets.items():
                if name == "before" and w != 1920:
                    continue
                template = (osprey_path if name != "thumbor" else thumbor_path)(f"s{w}/%d.jpg", 256, 256)
                # Every server has caches of its own: the same source names are cold for each.
                script = cold_script(work, f"cold-{name}-{w}", template)
                results["cold", label, name] = measure(name, pids, f"http://127.0.0.1:{port}/", script, cold=True)

        origin_pids = worker_pids(nginx)  # its master and workers, for the in-turns runs' origin CPU

        def in_turns(key, directory, script_name):
            """A cold phase over https against thumbor and against osprey's own http. Osprey runs over http and https
            in turn (SCHEME_TURNS), each run on sources of its own (`directory`-turnN, the same files), the origin
            nginx's CPU per request counted beside its own; then thumbor over https on `directory`. What https costs
            is the difference between runs next to each other, whose drift cancels, not between phases minutes
            apart. results[key + (scheme,)]: osprey's runs of each scheme as one; [key + ("osprey",)] its https
            runs again, [key + ("thumbor",)] thumbor's."""
            port, pids = targets["osprey"]

            def turns(name):
                runs = {"http": [], "https": []}
                for run, scheme in enumerate(SCHEME_TURNS):
                    base = secure_origin if scheme == "https" else origin
                    template = osprey_path(f"{directory}-{name}{run}/%d.jpg", 256, 256, base=base)
                    script = cold_script(work, f"{script_name}-{name}{run}", template)
                    origin_cpu = cpu_seconds(origin_pids)
                    result = measure(f"osprey {scheme}", pids, f"http://127.0.0.1:{port}/", script, cold=True)
                    result["origin cpu"] = (cpu_seconds(origin_pids) - origin_cpu) / max(result["requests"], 1)
                    runs[scheme].append(result)
                return {scheme: combined(measured) for scheme, measured in runs.items()}

            for scheme, result in turns("turn").items():
                results[key + (scheme,)] = result
                print(f"  osprey over {scheme:5}  {result['rps']:6.0f} req/s (mean of {SCHEME_TURNS.count(scheme)}); "
                      f"CPU per request: osprey {result['cpu'] * 1e3:.2f} ms (user {result['user'] * 1e3:.2f}, "
                      f"system {result['system'] * 1e3:.2f}), the origin nginx "
                      f"{result['origin cpu'] * 1e3:.2f} ms", flush=True)
            results[key + ("osprey",)] = results[key + ("https",)]
            everything = os.sched_getaffinity(0)
            if ORIGIN_APART and len(everything) >= 2:
                alone, others = {min(everything)}, everything - {min(everything)}
                print(f"  again, osprey alone on CPU {min(everything)}, the origin and wrk on the others:", flush=True)
                pin(pids, alone)
                pin(origin_pids, others)
                os.sched_setaffinity(0, others)  # wrk's
                try:
                    apart = turns("apart")
                finally:
                    pin(pids, everything)
                    pin(origin_pids, everything)
                    os.sched_setaffinity(0, everything)
                results[key + ("apart",)] = {"ratio": apart["https"]["rps"] / apart["http"]["rps"],
                                             "repeated": apart["http"]["repeated"] + apart["https"]["repeated"]}
                print(f"  osprey over https against http, the origin apart: {results[key + ('apart',)]['ratio']:.2f} "
                      f"(osprey's CPU per request {apart['https']['cpu'] * 1e3:.2f} against "
                      f"{apart['http']['cpu'] * 1e3:.2f} ms; not a target: the ratio when the origin's encryption does "
                      f"not run on osprey's CPUs)", flush=True)
            port, pids = targets["thumbor"]
            script = cold_script(work, f"{script_name}-thumbor",
                                 thumbor_path(f"{directory}/%d.jpg", 256, 256, base=secure_origin))
            results[key + ("thumbor",)] = measure("thumbor https", pids, f"http://127.0.0.1:{port}/", script,
                                                  cold=True)

        # The cold phase again, the sources fetched over https (new URLs, so cold for every server's caches).
        for w, h in SIZES[1:]:
            if "https" not in PHASES:
                break
            label = f"{w}x{h}"
            print(f"cold {label}, osprey over http and https in turns ({', '.join(SCHEME_TURNS)}), then thumbor over "
                  f"https -> fit 256x256 JPEG, every request a new source, wrk -t2 -c{CONNECTIONS} -d{DURATION}s",
                  flush=True)
            in_turns(("cold https", label), f"s{w}", f"cold-https-{w}")

        # The cold phase over https once more for each input kind, ratio per kind.
        for kind, description in KINDS.items():
            if "kinds" not in PHASES:
                break
            for w in (1920, 4000):
                size = (root / f"{kind}-{w}.jpg").stat().st_size
                print(f"cold {w} {description} ({size / 1e6:.2f} MB), osprey over http and https in turns, then "
                      f"thumbor over https -> fit 256x256 JPEG, every request a new source, wrk -t2 -c{CONNECTIONS} "
                      f"-d{DURATION}s", flush=True)
                in_turns(("kind", kind, w), f"k{kind}-{w}", f"kind-{kind}-{w}")
                # The floor: the same work in-process (scaled decode, fit 256, JPEG q80, one thread, no server). On
                # this CPU-bound machine osprey can beat thumbor by at most thumbor's CPU per request over it.
                output = subprocess.run([str(thumbnailer), "thumbnail", str(root / f"{kind}-{w}.jpg"), "9",
                                         str(work / "thumb-kind.jpg")], check=True, capture_output=True,
                                        text=True).stdout
                floor = float(re.search(r'"best":([\d.e-]+)', output).group(1)) * 1e3
                ours, theirs = (results["kind", kind, w, name]["cpu"] * 1e3 for name in ("osprey", "thumbor"))
                print(f"  floor: the thumbnail job in-process {floor:.2f} ms; thumbor {theirs:.2f} ms CPU per request, "
                      f"so at most {theirs / floor:.2f}x thumbor; osprey {ours:.2f} ms, {ours / floor:.2f}x the floor",
                      flush=True)
                # What both servers also do for a cold source, fetch it over https and store it (each keeps sources on
                # disk), as curl costs it: not a floor (a client can do it for less), a yardstick for what osprey
                # spends beyond the in-process work.
                fetch = curl_fetch_cost(f"{secure_origin}/k{kind}-{w}", 200 if w == 1920 else 50, authority,
                                        disk / "curl-fetch")
                print(f"  fetch and store, as curl costs them (https, HTTP/1.1, each source written to a file): "
                      f"{fetch:.2f} ms CPU a source; osprey spends {ours - floor:.2f} ms a request beyond the "
                      f"in-process work", flush=True)

        for phase, source, size, form in (("avif source", "a1920/%d.avif", 256, "jpeg"),
                                          ("avif output", "c1920/%d.jpg", 800, "avif")):
            if "avif" not in PHASES:
                break
            print(f"cold {phase}: {source} -> fit {size}x{size} {form.upper()}, every request a new source, "
                  f"wrk -t2 -c{CONNECTIONS} -d{DURATION}s", flush=True)
            for name in ("osprey", "thumbor"):
                port, pids = targets[name]
                template = (osprey_path if name != "thumbor" else thumbor_path)(source, size, size, form)
                script = cold_script(work, f"cold-{name}-{form}", template)
                results["cold", phase, name] = measure(name, pids, f"http://127.0.0.1:{port}/", script, cold=True)

        # q=auto through the proxy: what a cold request costs when the quality is searched for, beside a fixed one.
        for size in QUALITY_SIZES:
            if "quality" not in PHASES:
                break
            port, pids = targets["osprey"]
            print(f"cold 1920x1080 -> fit {size}x{size} WebP, q=79 beside q=auto (target 70), every request a new "
                  f"source, wrk -t2 -c{CONNECTIONS} -d{DURATION}s", flush=True)
            for kind, quality in (("fixed", "79"), ("auto", "auto")):
                template = osprey_path(f"q{kind}-{size}/%d.jpg", size, size, "webp") + f"&q={quality}"
                script = cold_script(work, f"quality-{kind}-{size}", template)
                results["quality", size, kind] = measure(
                    f"osprey q={quality}", pids, f"http://127.0.0.1:{port}/", script, cold=True)
            ratio = results["quality", size, "auto"]["cpu"] / results["quality", size, "fixed"]["cpu"]
            print(f"  CPU per cold request, q=auto over q=79: {ratio:.2f}x (target <= 2.0: "
                  f"{'PASS' if ratio <= 2.0 else 'FAIL'})", flush=True)

        if "features" in PHASES:
            print(f"cold features: f1920/N.jpg cropped to 1600x900 at 160,90, 320x180 at dpr=2 (640x360), "
                  f"watermarked at 60 % 10 px from the bottom right, JPEG, wrk -t2 -c{CONNECTIONS} -d{DURATION}s",
                  flush=True)
            feature_paths = {
                "osprey": f"/img?url={origin}/f1920/%d.jpg&crop=160:90:1600:900&w=320&h=180&fit=cover&dpr=2"
                          f"&wm=0.6:southeast:10:10&format=jpeg",
                "thumbor": f"/unsafe/160x90:1760x990/640x360/filters:watermark({origin}/wm.png,-10,-10,40)"
                           f":format(jpeg)/{origin}/f1920/%d.jpg",
            }
            for name in ("osprey", "thumbor"):
                port, pids = targets[name]
                script = cold_script(work, f"features-{name}", feature_paths[name])
                results["cold", "features", name] = measure(name, pids, f"http://127.0.0.1:{port}/", script,
                                                            cold=True)

        if "mix" in PHASES:
            # The same thumbor URLs to both: osprey's thumbor endpoint under /thumbor, thumbor at its root.
            mix = "{" + ",".join(f'"{item}"' for item in THUMBOR_MIX) + "}"
            prefixes = {"osprey": "/thumbor/unsafe/", "thumbor": "/unsafe/"}
            for name in ("osprey", "thumbor"):
                port, _ = targets[name]
                for item in THUMBOR_MIX:  # the hot phase's renders made once
                    urllib.request.urlopen(f"http://127.0.0.1:{port}{prefixes[name]}{item}{origin}/photo-1920.jpg").read()
            print(f"thumbor URL mix ({len(THUMBOR_MIX)} URLs in turn), hot: one 1920x1080 source's, wrk -t2 "
                  f"-c{HOT_CONNECTIONS} -d{DURATION}s", flush=True)
            for name in ("osprey", "thumbor"):
                port, pids = targets[name]
                body = (f'  local mix = {mix}\n  local path = "{prefixes[name]}" .. mix[(n % {len(THUMBOR_MIX)}) + 1]'
                        f' .. "{origin}/photo-1920.jpg"')
                script = lua_script(work, f"mix-hot-{name}", body)
                results["mix hot", name] = measure(name, pids, f"http://127.0.0.1:{port}/", script,
                                                   connections=HOT_CONNECTIONS)
            print(f"thumbor URL mix, cold: every request a new 1920x1080 source, wrk -t2 -c{CONNECTIONS} "
                  f"-d{DURATION}s; in-process thumbnail job (decode, fit 256, JPEG) "
                  f"{thumbnail_ms['1920x1080']:.2f} ms CPU per image", flush=True)
            for name in ("osprey", "thumbor"):
                port, pids = targets[name]
                body = (f'  local mix = {mix}\n  local path = "{prefixes[name]}" .. mix[(n % {len(THUMBOR_MIX)}) + 1]'
                        f' .. "{origin}/m1920/" .. (offset + n) .. ".jpg"')
                script = lua_script(work, f"mix-cold-{name}", body)
                results["mix cold", name] = measure(name, pids, f"http://127.0.0.1:{port}/", script, cold=True)
            print(f"  CPU per cold request over the thumbnail job's: osprey "
                  f"{results['mix cold', 'osprey']['cpu'] * 1e3 / thumbnail_ms['1920x1080']:.2f}x, thumbor "
                  f"{results['mix cold', 'thumbor']['cpu'] * 1e3 / thumbnail_ms['1920x1080']:.2f}x", flush=True)

        if "info" in PHASES:
            # Every request a new 12 MP source, each server its own directory (its caches are its own).
            print(f"cold info: every request a new 4000x3000 JPEG, wrk -t2 -c{CONNECTIONS} -d{DURATION}s: osprey's "
                  f"/info with its placeholders beside thumbor's meta/ and osprey's /img?w=64", flush=True)
            info_paths = {
                ("info", "osprey"): f"/info?url={origin}/i4000/%d.jpg",
                ("info", "thumbor"): f"/unsafe/meta/{origin}/t4000/%d.jpg",
                ("info", "osprey w=64"): f"/img?url={origin}/w4000/%d.jpg&w=64",
            }
            for (phase, name), template in info_paths.items():
                port, pids = targets["thumbor" if name == "thumbor" else "osprey"]
                script = cold_script(work, f"info-{name.replace(' ', '-').replace('=', '')}", template)
                results[phase, name] = measure(name, pids, f"http://127.0.0.1:{port}/", script, cold=True)

        if "variants" in PHASES:
            count = len(VARIANT_WIDTHS) * len(VARIANT_FORMATS)
            print(f"many variants: {count} variants ({len(VARIANT_WIDTHS)} sizes x {'/'.join(VARIANT_FORMATS)}) of "
                  f"each 1920x1080 source at once, source after source, wrk -t2 -c{CONNECTIONS} -d{DURATION}s",
                  flush=True)
            for name, (port, pids) in targets.items():
                directory = {"osprey": "v-osprey", "thumbor": "v-thumbor", "before": "v-before"}[name]
                builder = osprey_path if name != "thumbor" else thumbor_path
                template = builder(f"{directory}/SOURCE.jpg", "WIDTH", "WIDTH", "FORMAT")
                results["variants", name] = measure(
                    name, pids, f"http://127.0.0.1:{port}/", variants_script(work, f"variants-{name}", template))
                print(f"  {'':16} {results['variants', name]['requests'] / count:9.0f} sources", flush=True)
            # What no server can go below on this mix: the 30 encodes alone, in process on one thread (libjpeg-turbo
            # and libwebp at q80, the settings every server here uses), from images already decoded and resized. On
            # a CPU-bound machine a server's requests/s over a peer's is at most the peer's CPU per request over this.
            output = subprocess.run([str(thumbnailer), "variants", str(root / "photo-1920.jpg"), "5",
                                     str(work / "variants.webp")], check=True, capture_output=True, text=True).stdout
            parts = {key: float(value) for key, value in re.findall(r'"(\w+)":([\d.e-]+)', output)}
            encode_floor = parts["encode"] / parts["outputs"]
            print(f"  the {count} encodes alone: {encode_floor * 1e3:.2f} ms CPU per variant (decode "
                  f"{parts['decode'] * 1e3:.2f} ms per source, {len(VARIANT_WIDTHS)} resizes from full size "
                  f"{parts['resize'] * 1e3:.1f} ms); ceiling on CPU: "
                  + ", ".join(f"{results['variants', name]['cpu'] / encode_floor:.2f}x {name}"
                              for name in targets if name != "osprey"), flush=True)
            # And what no server can do the work with: the encodes, plus one decode scaled for the largest variant
            # and the 15 resizes from it (every server must decode and resize; none can do less of either).
            work_floor = (parts["scaledDecode"] + parts["scaledResize"] + parts["encode"]) / parts["outputs"]
            osprey_cpu = results["variants", "osprey"]["cpu"]
            print(f"  the work itself: {work_floor * 1e3:.2f} ms CPU per variant (one decode scaled for the largest "
                  f"{parts['scaledDecode'] * 1e3:.2f} ms, the {len(VARIANT_WIDTHS)} resizes from it "
                  f"{parts['scaledResize'] * 1e3:.1f} ms, the encodes); osprey at {encode_floor / osprey_cpu:.2f}x "
                  f"its encode floor, {work_floor / osprey_cpu:.2f}x the work's; the encode floor's target (0.9x, "
                  f"{encode_floor / 0.9 * 1e3:.2f} ms) is {'below' if encode_floor / 0.9 < work_floor else 'above'} "
                  f"the work's floor", flush=True)

        def ratio(a, b, key="rps"):
            return a[key] / b[key]

        def have(*keys):
            return all(key in results for key in keys)

        checks = []
        pairs = [("hot vs thumbor", ("hot", "osprey"), ("hot", "thumbor"), 10.0),
                 ("hot vs nginx static", ("hot", "osprey"), ("hot", "nginx"), 0.3),
                 ("cold 1920x1080 vs thumbor", ("cold", "1920x1080", "osprey"), ("cold", "1920x1080", "thumbor"), 1.8),
                 ("cold 4000x3000 vs thumbor", ("cold", "4000x3000", "osprey"), ("cold", "4000x3000", "thumbor"), 1.5),
                 ("cold 640x480 vs thumbor", ("cold", "640x480", "osprey"), ("cold", "640x480", "thumbor"), 1.0),
                 ("many variants vs thumbor", ("variants", "osprey"), ("variants", "thumbor"), 3.0),
                 ("cold AVIF source vs thumbor", ("cold", "avif source", "osprey"), ("cold", "avif source", "thumbor"),
                  1.0),
                 ("cold AVIF output vs thumbor", ("cold", "avif output", "osprey"), ("cold", "avif output", "thumbor"),
                  1.0),
                 ("cold crop + dpr=2 + watermark vs thumbor", ("cold", "features", "osprey"),
                  ("cold", "features", "thumbor"), 3.0),
                 ("cold 1920x1080 over https vs thumbor", ("cold https", "1920x1080", "osprey"),
                  ("cold https", "1920x1080", "thumbor"), 1.8),
                 ("cold 4000x3000 over https vs thumbor", ("cold https", "4000x3000", "osprey"),
                  ("cold https", "4000x3000", "thumbor"), 1.5),
                 ("cold 1920x1080 over https vs over http", ("cold https", "1920x1080", "https"),
                  ("cold https", "1920x1080", "http"), 0.9),
                 ("cold 4000x3000 over https vs over http", ("cold https", "4000x3000", "https"),
                  ("cold https", "4000x3000", "http"), 0.9),
                 ("thumbor URL mix hot vs thumbor", ("mix hot", "osprey"), ("mix hot", "thumbor"), 10.0),
                 ("thumbor URL mix cold vs thumbor", ("mix cold", "osprey"), ("mix cold", "thumbor"), 1.8),
                 ("cold /info vs thumbor meta/", ("info", "osprey"), ("info", "thumbor"), 5.0),
                 ("cold /info vs cold /img?w=64 (within 1.3x)", ("info", "osprey"), ("info", "osprey w=64"), 1 / 1.3)]
        for kind, description in KINDS.items():
            for w, target in ((1920, 1.8), (4000, 1.5)):
                pairs.append((f"cold {w} {description} over https vs thumbor", ("kind", kind, w, "osprey"),
                              ("kind", kind, w, "thumbor"), target))
                pairs.append((f"cold {w} {description} over https vs over http", ("kind", kind, w, "https"),
                              ("kind", kind, w, "http"), 0.9))
        for name, ours, theirs, target in pairs:
            if have(ours, theirs):
                checks.append((name, ratio(results[ours], results[theirs]), target))
        for w, h in SIZES:
            label = f"{w}x{h}"
            if have(("cold", label, "osprey")):
                checks.append((f"cold {label} CPU vs thumbnail job (lower is better)",
                               thumbnail_ms[label] * 1.25 / (results["cold", label, "osprey"]["cpu"] * 1e3), 1.0))
        for phase in [("hot",), ("cold", "640x480"), ("cold", "1920x1080"), ("cold", "4000x3000"),
                      ("cold https", "1920x1080"), ("cold https", "4000x3000"), ("variants",),
                      ("cold", "avif source"), ("cold", "avif output"), ("cold", "features"), ("mix hot",),
                      ("mix cold",), ("info",)]:
            if have((*phase, "thumbor"), (*phase, "osprey")):
                checks.append((f"{' '.join(phase)} p99 below thumbor's",
                               results[(*phase, "thumbor")]["p99"] / results[(*phase, "osprey")]["p99"], 1.0))
        repeats = sum(result.get("repeated", 0) for result in results.values())
        checks.append(("cold phases: no source fetched twice (1 = none)", 1.0 if repeats == 0 else 0.0, 1.0))
        if before and have(("hot", "before"), ("cold", "1920x1080", "before"), ("variants", "before")):
            checks += [
                ("hot vs before (within 5%)", ratio(results["hot", "osprey"], results["hot", "before"]), 0.95),
                ("cold 1920x1080 vs before", ratio(results["cold", "1920x1080", "osprey"],
                                                    results["cold", "1920x1080", "before"]), 1.0),
                ("many variants vs before", ratio(results["variants", "osprey"], results["variants", "before"]), 3.0),
            ]
        apart = [(key[:-1], value["ratio"]) for key, value in results.items() if key[-1] == "apart"]
        if apart:
            print("over https against http with the origin apart (osprey alone on one CPU; not targets):")
            for key, value in apart:
                print(f"  {' '.join(map(str, key)):52} {value:8.2f}")
        print("ratios (target):")
        failed = 0
        for name, value, target in checks:
            ok = record("proxy", name, value, target)
            failed += not ok
            print(f"  {name:52} {value:8.2f}  (>= {target})  {'PASS' if ok else 'FAIL'}")
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
