#!/usr/bin/env python3
"""Decode throughput of Osprey beside the C libraries' own tools (djpeg, dwebp), Pillow and pyvips, in one run.

Installs what it needs (Debian's libjpeg-turbo-progs and webp; Pillow, pyvips and pyvips-binary into a venv under
Benchmarks/.venv), builds codec-throughput in release, and prints megapixels per second and ratios for each input,
then the targets of the Codecs issue with PASS/FAIL:

  - full decodes at least 0.95x djpeg / dwebp;
  - at least 1.0x the best of Pillow and pyvips, for every format;
  - a 1/8-scale decode of a 7680x4320 baseline JPEG at least 1.5x faster than a full decode of it, with peak memory
    under a quarter of the full decode's.

Inputs: the corpus's large JPEGs when present (../shared/testdata or $OSPREY_TESTDATA), else a generated picture;
PNG, WebP and GIF versions of the 4032x3024 photo (and of a 1024x768 reduction) are written by Pillow into
.build/bench-data, so no peer decodes a file its own library encoded from our output.
"""
import json, os, shutil, subprocess, sys, time
from pathlib import Path

from benchkit import apt_install, build, record, sh, venv_python

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / ".build" / "bench-data"
ITERATIONS = int(os.environ.get("ITERATIONS", "7"))
# Osprey and its peers are measured in alternating rounds, each keeping its best time, so that a noisy spell on a
# shared machine lands on both sides instead of on one.
ROUNDS = int(os.environ.get("ROUNDS", "3"))


def ensure_peers():
    apt_install([p for p, tool in (("libjpeg-turbo-progs", "djpeg"), ("webp", "dwebp")) if not shutil.which(tool)])
    return venv_python(["PIL", "pyvips"], ["pillow", "pyvips", "pyvips-binary"])


def corpus():
    base = Path(os.environ.get("OSPREY_TESTDATA", ROOT.parent / "shared" / "testdata"))
    images = base / "images" if (base / "images").is_dir() else base
    return images if (images / "MANIFEST.tsv").exists() else None


def inputs(python):
    """[(label, path, megapixels)]: the large JPEGs, and PNG / WebP / GIF made from the photo."""
    DATA.mkdir(parents=True, exist_ok=True)
    images = corpus()
    jpegs = []
    if images:
        jpegs = [("jpeg baseline 7680x4320", images / "valid/jpeg/large/speed_bench_hv_subsampling.jpg"),
                 ("jpeg progressive 7680x4320", images / "valid/jpeg/large/speed_bench_prog_hv_sampling.jpg"),
                 ("jpeg photo 4032x3024", images / "valid/jpeg/large/pixel3a_exif_rotated.jpg")]
    photo = DATA / "photo.jpg"
    if not photo.exists():
        script = """
import sys
from PIL import Image
if len(sys.argv) > 2 and sys.argv[2]:
    im = Image.open(sys.argv[2]).convert("RGB")
else:
    im = Image.effect_mandelbrot((4032, 3024), (-2.2, -1.3, 1.0, 1.3), 90).convert("RGB")
im.save(sys.argv[1], quality=92)
"""
        source = str(jpegs[2][1]) if jpegs else ""
        sh(str(python), "-c", script, str(photo), source)
    if not jpegs:
        jpegs = [("jpeg photo (generated)", photo)]
    made = []
    script = """
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
for path, kind in (("photo.png", "png"), ("photo-lossy.webp", "webp"), ("photo-lossless.webp", "webpll"),
                   ("photo.gif", "gif"), ("photo-1024.png", "png1024"), ("photo-1024.webp", "webp1024")):
    out = sys.argv[2] + "/" + path
    if kind == "png": im.save(out)
    elif kind == "webp": im.save(out, quality=80)
    elif kind == "webpll": im.save(out, lossless=True)
    elif kind == "gif": im.quantize(256).save(out)
    elif kind == "png1024": im.resize((1024, 768)).save(out)
    elif kind == "webp1024": im.resize((1024, 768)).save(out, quality=80)
"""
    if not (DATA / "photo-1024.webp").exists():
        sh(str(python), "-c", script, str(photo), str(DATA))
    for name, label in (("photo.png", "png photo"), ("photo-1024.png", "png 1024x768"),
                        ("photo-lossy.webp", "webp lossy photo"), ("photo-1024.webp", "webp lossy 1024x768"),
                        ("photo-lossless.webp", "webp lossless photo"), ("photo.gif", "gif photo")):
        made.append((label, DATA / name))
    return jpegs + made


def ours(tool, path, budget=None, upright=False):
    """Our decode; like the peers, it keeps the stored orientation unless `upright`."""
    args = [str(tool), str(path), str(ITERATIONS)] + (["--budget", str(budget)] if budget else [])
    args += [] if upright else ["--keep-orientation"]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)


def command_time(args):
    times = []
    for _ in range(ITERATIONS):
        start = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return min(times)


def python_times(python, path):
    script = """
import sys, time, json
from PIL import Image
import pyvips
# libvips caches operations: a repeated load of the same file would be served from the cache, not decoded.
pyvips.cache_set_max(0)
path, n = sys.argv[1], int(sys.argv[2])
def best(f):
    t = []
    for _ in range(n):
        s = time.perf_counter(); f(); t.append(time.perf_counter() - s)
    return min(t)
def pil():
    im = Image.open(path); im.load()
def vips():
    pyvips.Image.new_from_file(path, access="sequential").copy_memory()
print(json.dumps({"pillow": best(pil), "pyvips": best(vips)}))
"""
    return json.loads(subprocess.run([str(python), "-c", script, str(path), str(ITERATIONS)], check=True,
                                     capture_output=True, text=True).stdout)


def main():
    python = ensure_peers()
    tool = build("codec-throughput")
    results, failures = [], []
    print(f"{'input':28} {'MP':>6} {'osprey MP/s':>11} {'C tool':>8} {'Pillow':>8} {'pyvips':>8}  ratios (osprey / peer)")
    for label, path in inputs(python):
        if not path.exists():
            print(f"{label}: missing {path}, skipped")
            continue
        o, c_tool, peers = None, None, None
        for _ in range(ROUNDS):
            measured = ours(tool, path)
            o = measured if o is None or measured["best"] < o["best"] else o
            if label.startswith("jpeg"):
                t = command_time(["djpeg", "-outfile", os.devnull, str(path)])
                c_tool = t if c_tool is None else min(c_tool, t)
            elif label.startswith("webp"):
                t = command_time(["dwebp", str(path), "-ppm", "-o", os.devnull])
                c_tool = t if c_tool is None else min(c_tool, t)
            p = python_times(python, path)
            peers = p if peers is None else {k: min(peers[k], p[k]) for k in p}
        mp = o["width"] * o["height"] / 1e6
        row = {"ours": o["best"], "tool": c_tool, **peers}
        rate = lambda t: mp / t if t else float("nan")
        ratios = {k: row[k] / o["best"] for k in ("tool", "pillow", "pyvips") if row[k]}
        print(f"{label:28} {mp:6.1f} {rate(o['best']):11.1f} {rate(c_tool):8.1f} {rate(peers['pillow']):8.1f} "
              f"{rate(peers['pyvips']):8.1f}  " + "  ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
        if c_tool and not record("codecs", f"{label}: vs the C tool", ratios["tool"], 0.95):
            failures.append(f"{label}: {ratios['tool']:.2f}x the C tool (target 0.95x)")
        best_peer = min(peers["pillow"], peers["pyvips"])
        if not record("codecs", f"{label}: vs Pillow/pyvips", best_peer / o["best"], 1.0):
            failures.append(f"{label}: {best_peer / o['best']:.2f}x the best of Pillow and pyvips (target 1.0x)")
        results.append((label, row))
        if "photo 4032" in label:
            turned = ours(tool, path, upright=True)
            print(f"{'  ...turned upright (EXIF 6)':28} {mp:6.1f} {rate(turned['best']):11.1f}  "
                  f"(the peers above do not apply EXIF orientation)")

    images = corpus()
    big = images / "valid/jpeg/large/speed_bench_hv_subsampling.jpg" if images else None
    if big and big.exists():
        full, eighth = ours(tool, big), ours(tool, big, budget=(7680 // 8) * (4320 // 8))
        speedup = full["best"] / eighth["best"]
        memory = eighth["maxRSSKiB"] / full["maxRSSKiB"]
        print(f"\n1/8-scale decode of 7680x4320: {eighth['width']}x{eighth['height']} in {eighth['best'] * 1e3:.1f} ms "
              f"vs full {full['best'] * 1e3:.1f} ms: {speedup:.2f}x faster; peak RSS {eighth['maxRSSKiB'] / 1024:.0f} MiB "
              f"vs {full['maxRSSKiB'] / 1024:.0f} MiB ({memory:.2f} of the full decode's)")
        if not record("codecs", "1/8-scale decode speed-up", speedup, 1.5):
            failures.append(f"1/8-scale decode only {speedup:.2f}x faster (target 1.5x)")
        if not record("codecs", "1/8-scale decode peak memory share", memory, 0.25, higher_is_better=False):
            failures.append(f"1/8-scale decode peak memory {memory:.2f} of full (target < 0.25)")
    print("\ntargets: " + ("PASS" if not failures else "FAIL\n  " + "\n  ".join(failures)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
