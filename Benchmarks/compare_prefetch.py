#!/usr/bin/env python3
"""What `osprey prefetch` and `osprey fetch` (original bytes, disk cache on) cost beside curl --parallel, in one run.

nginx on 127.0.0.1 serves, over http and over https (a certificate of an authority the script makes, HTTP/2 offered
as CDNs offer it: curl takes it, osprey asks in HTTP/1.1 unless given `--http2`, a row of its own), two workloads: "small", 1,000 URLs of the corpus's decodable JPEGs of 30-90 KB (query strings make
every URL distinct, so every one is a download and a disk write), and "mixed", 400 URLs of its JPEG, PNG, WebP and
GIF files of 100 KB-2 MB. Without the corpus, Pillow writes stand-ins. Each client runs at 6 and 32 connections, in
alternating rounds, keeping its best: curl writing to /dev/null, and curl writing a file per URL into an empty
directory (the disk work a prefetch does too); `osprey prefetch` into an empty disk cache; and
`osprey fetch -o DIR` into an empty disk cache and an empty output directory. Neither osprey command decodes an
image: prefetch warms the disk cache with the bytes as served, fetch writes them after reading their header. What
they write goes to a journaled ext4 made for the run when run as root (`output_filesystem` says why).

Prints requests per second and the ratios (to curl into /dev/null, and to curl into files), the CPU per URL of each
client, then the target: both osprey commands >= 0.8x curl into /dev/null on both workloads at both concurrencies. Beside
them, `osprey prefetch --memory-only` (no disk cache: the download path alone) against curl into /dev/null, and
curl into files against curl into /dev/null, show how much of the gap is the disk writes every peer pays too; and two
floors without a disk, each a process of its own: AsyncHTTPClient alone (`ahc-floor`) and NIO's HTTP/1.1 codec
alone (`nio-floor`), both collecting each body into an array as the downloader does; and `nio-disk-floor`, NIO's
codec storing each body in Osprey's DiskCache from a task: what a prefetch on a lean NIO client would cost at least;
and `nio-fetch-floor`, the same then writing each body to a file of its own as curl does (no temporary name): what a
fetch on such a client would cost at least, its bytes written twice, once into the cache and once into the file.
"""
import os, random, shutil, subprocess, sys, tempfile, time
from pathlib import Path

from benchkit import build, build_osprey, record, scratch_filesystem, venv_python
from compare_downloads import ensure_peers, free_port, run_child, start_nginx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / ".build" / "bench-prefetch"
ROUNDS = int(os.environ.get("ROUNDS", "3"))
CONCURRENCIES = [6, 32]


def workloads(python):
    """{name: (root, [relative paths])} for the two workloads."""
    corpus = Path(os.environ.get("OSPREY_TESTDATA", ROOT.parent / "shared" / "testdata")) / "images"
    if (corpus / "valid").is_dir():
        # Files the manifest says decode (not the 12-bit or lossless JPEGs that libjpeg-turbo refuses).
        with open(corpus / "MANIFEST.tsv") as manifest:
            columns = manifest.readline().rstrip("\n").split("\t")
            rows = [dict(zip(columns, line.rstrip("\n").split("\t"))) for line in manifest]
        decodable = {row["path"] for row in rows if row["expected"] == "decode-ok"}

        def pick(folders, low, high):
            return sorted(p.relative_to(corpus).as_posix() for folder in folders
                          for p in (corpus / "valid" / folder).rglob("*")
                          if p.is_file() and low <= p.stat().st_size <= high
                          and p.relative_to(corpus).as_posix() in decodable)
        return {"small": (corpus, pick(["jpeg"], 30_000, 90_000)),
                "mixed": (corpus, pick(["jpeg", "png", "webp", "gif"], 100_000, 2_000_000))}
    DATA.mkdir(parents=True, exist_ok=True)
    script = """
import sys, random
from PIL import Image
out, count, side = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(count):
    image = Image.effect_mandelbrot((side, side * 3 // 4), (-2 + i * 0.01, -1.2, 1, 1.2), 60).convert("RGB")
    image.save(f"{out}/{side}-{i}.jpg", quality=90)
"""
    sh = lambda *a: subprocess.run(a, check=True)
    sh(str(python), "-c", script, str(DATA), "20", "400")
    sh(str(python), "-c", script, str(DATA), "10", "1600")
    files = sorted(p.name for p in DATA.glob("*.jpg"))
    return {"small": (DATA, [f for f in files if f.startswith("400-")]),
            "mixed": (DATA, [f for f in files if f.startswith("1600-")])}


def main():
    with scratch_filesystem("PREFETCH_DISK_DIR") as (disk, description):
        print(f"files, disk caches and outputs written under {disk}: {description}")
        return measure(disk)


def measure(disk):
    ensure_peers()
    python = venv_python(["PIL"], ["pillow"])
    osprey = build_osprey()
    nio_floor, ahc_floor = build("nio-floor"), build("ahc-floor")
    failures = []
    for name, (root, files) in workloads(python).items():
        count = 1000 if name == "small" else 400
        port, tls_port = free_port(), free_port()
        prefix = Path(tempfile.mkdtemp(prefix="osprey-prefetch-"))
        server = start_nginx(root, port, prefix, tls_port=tls_port)
        authority = prefix / "origin-cert.pem"
        try:
            for scheme in ("http", "https"):
                failures += measure_scheme(scheme, name, count, root, files, tls_port if scheme == "https" else port,
                                           authority, prefix, disk, osprey, nio_floor, ahc_floor)
        finally:
            server.terminate()
            server.wait()
            shutil.rmtree(prefix, ignore_errors=True)
    print("\ntargets (>= 0.8x curl --parallel): " + ("PASS" if not failures else "FAIL: " + ", ".join(failures)))
    return 0


def measure_scheme(scheme, name, count, root, files, port, authority, prefix, disk, osprey, nio_floor, ahc_floor):
    """One workload over one scheme: every client at both concurrencies, best of ROUNDS; prints the rows and returns
    the targets missed. Over https nginx offers HTTP/2 (curl takes it; osprey offers it only with --http2, a row of its
    own, and speaks HTTP/1.1 otherwise) with a certificate of the run's
    own authority, which curl is given with --cacert and osprey with --ca-file; the floors are for http only."""
    failures = []
    base = f"{scheme}://127.0.0.1:{port}/"
    urls = [f"{base}{files[i % len(files)]}?i={i}" for i in range(count)]
    random.Random(5).shuffle(urls)
    url_file = prefix / f"urls-{scheme}.txt"
    url_file.write_text("\n".join(urls) + "\n")
    curl_config = prefix / f"curl-{scheme}.txt"
    curl_config.write_text("".join(f'url = "{u}"\noutput = "/dev/null"\n' for u in urls))
    # The same with a file written for each URL: the disk work a prefetch does too.
    curl_files = prefix / f"curl-files-{scheme}.txt"
    curl_files.write_text("".join(f'url = "{u}"\noutput = "{i}"\n' for i, u in enumerate(urls)))
    total = sum((root / u[len(base):].split("?")[0]).stat().st_size for u in urls)
    print(f"\n{name} over {scheme}: {count} URLs of {len(files)} files, {total / 1e6:.1f} MB "
          f"({total / count / 1e3:.0f} KB each on average)")
    trust_curl = ["--cacert", str(authority)] if scheme == "https" else []
    trust_osprey = ["--ca-file", str(authority)] if scheme == "https" else []

    def fresh(path):
        shutil.rmtree(path, ignore_errors=True)
        return str(path)

    clients = {
        "curl": lambda n: ["curl", "-s", *trust_curl, "--parallel", "--parallel-max", str(n), "-K", str(curl_config)],
        "curl-files": lambda n: ["curl", "-s", *trust_curl, "--parallel", "--parallel-max", str(n), "--create-dirs",
                                 "-K", str(curl_files), "--output-dir", fresh(disk / "curl-out")],
        "prefetch": lambda n: [str(osprey), "prefetch", "--quiet", *trust_osprey, "-i", str(url_file),
                               "--max-concurrent", str(n), "--cache-dir", fresh(disk / "cache")],
        # The same without a disk cache: what the download path alone costs, beside curl into /dev/null.
        "prefetch-memory": lambda n: [str(osprey), "prefetch", "--quiet", *trust_osprey, "-i", str(url_file),
                                      "--max-concurrent", str(n), "--memory-only"],
        # The list from a file, as prefetch reads it and curl reads its config: the argument parser's cost
        # grows with the square of the number of URLs given as arguments (0.05 s for 1,000).
        "fetch": lambda n: [str(osprey), "fetch", "--quiet", *trust_osprey, "--max-concurrent", str(n),
                            "--cache-dir", fresh(disk / "cache"), "-o", fresh(disk / "out"), "-i", str(url_file)],
    }
    if scheme == "https":
        # HTTP/2 offered too (`--http2`): nginx chooses it, every download a stream of one connection, as curl's are.
        clients["prefetch-http2"] = lambda n: [str(osprey), "prefetch", "--quiet", "--http2", *trust_osprey, "-i",
                                               str(url_file), "--max-concurrent", str(n), "--cache-dir",
                                               fresh(disk / "cache")]
    if scheme == "http":
        clients |= {
            # Floors, no disk: NIO's HTTP/1.1 codec alone, and AsyncHTTPClient alone, each collecting bodies.
            "nio-floor": lambda n: [str(nio_floor), str(url_file), str(n)],
            # The same storing each body in Osprey's DiskCache, as a prefetch does: a prefetch's floor on NIO.
            "nio-disk-floor": lambda n: [str(nio_floor), str(url_file), str(n), "2", fresh(disk / "floor-cache")],
            # And writing each body to a file of its own as curl does, after storing it: a fetch's floor on NIO.
            "nio-fetch-floor": lambda n: [str(nio_floor), str(url_file), str(n), "2", fresh(disk / "floor-cache"),
                                          fresh(disk / "floor-out")],
            "ahc-floor": lambda n: [str(ahc_floor), str(url_file), str(n)],
        }
    for command in clients.values():
        run_child(command(6))  # nginx's file cache and first-run costs
    best, cpu = {}, {}
    for _ in range(ROUNDS):
        for concurrency in CONCURRENCIES:
            for client, command in clients.items():
                # The previous run's files written back first, so that no run pays for another's.
                os.sync()
                result = run_child(command(concurrency))
                key = (client, concurrency)
                if result["seconds"] < best.get(key, float("inf")):
                    best[key], cpu[key] = result["seconds"], result["cpu_seconds"]
    for concurrency in CONCURRENCIES:
        curl = count / best[("curl", concurrency)]
        files_rate = count / best[("curl-files", concurrency)]
        row = [f"  {concurrency:>2} connections: curl {curl:7.0f} req/s (to files {files_rate:6.0f}, "
               f"{files_rate / curl:4.2f}x)"]
        for client in ("prefetch", "fetch"):
            rate = count / best[(client, concurrency)]
            ratio = rate / curl
            verdict = "PASS" if record("prefetch", f"{client} {name} {scheme} {concurrency}c vs curl", ratio, 0.8) else "FAIL"
            # The one-client issue's target: against curl writing the same files.
            record("prefetch", f"{client} {name} {scheme} {concurrency}c vs curl to files", rate / files_rate, 0.8)
            if verdict == "FAIL":
                failures.append(f"{client} {name} over {scheme} at {concurrency}")
            row.append(f"{client} {rate:7.0f} req/s {ratio:5.2f}x {verdict} ({rate / files_rate:4.2f}x to files)")
        if ("prefetch-http2", concurrency) in best:
            rate = count / best[("prefetch-http2", concurrency)]
            row.append(f"prefetch --http2 {rate:7.0f} req/s {rate / curl:5.2f}x ({rate / files_rate:4.2f}x to files)")
        memory = count / best[("prefetch-memory", concurrency)]
        row.append(f"prefetch --memory-only {memory:7.0f} req/s {memory / curl:5.2f}x")
        for client in ("ahc-floor", "nio-floor"):
            if (client, concurrency) in best:
                rate = count / best[(client, concurrency)]
                row.append(f"{client} {rate:7.0f} req/s {rate / curl:5.2f}x")
        for client in ("nio-disk-floor", "nio-fetch-floor"):
            if (client, concurrency) in best:
                rate = count / best[(client, concurrency)]
                row.append(f"{client} {rate:7.0f} req/s {rate / curl:5.2f}x ({rate / files_rate:4.2f}x to files)")
        print(" | ".join(row))
        # CPU per download (user + system, of the whole process) in the fastest run, beside curl's.
        print(f"     CPU per URL over {scheme}: " + ", ".join(
            f"{client} {cpu[(client, concurrency)] / count * 1e6:4.0f} µs"
            for client in ("curl", "curl-files", "prefetch-memory", "prefetch", "prefetch-http2", "fetch")
            if (client, concurrency) in cpu))
    return failures


if __name__ == "__main__":
    sys.exit(main())
