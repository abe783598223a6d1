#!/usr/bin/env python3
"""Start-up, and what it costs a shell loop: `osprey` beside djpeg and ImageMagick, in one run.

Installs ImageMagick and libjpeg-turbo's tools when missing, builds osprey as `make build` does (release, the Swift
runtime linked in) and installs it into a temporary directory as `make install` does, and measures:

  - start-up: the wall time of `osprey --version`, `djpeg -version` and ImageMagick's `convert -version`, each run
    RUNS times, the three interleaved in rounds so that a noisy spell lands on all of them; the median and the 90th
    percentile. Target: osprey at most 5 ms.
  - the thumbnail job one process per image, as a shell loop runs it: for each of COUNT 640x480 JPEGs made from
    the corpus's photos, `osprey convert IN OUT --resize 256x256 --quality 80` against
    `convert IN -resize 256x256 -quality 80 OUT`, images per second, best of ROUNDS alternating rounds. Target:
    osprey at least 1.0x ImageMagick.

ImageMagick is Debian's `convert` (/usr/bin/convert, whatever else is first on PATH), run as its users run it.
"""
import os, shutil, statistics, subprocess, sys, tempfile, time
from pathlib import Path

from benchkit import apt_install, build_osprey, record

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RUNS = int(os.environ.get("RUNS", "200"))
COUNT = int(os.environ.get("COUNT", "40"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
MAGICK = "/usr/bin/convert"


def corpus_jpegs():
    base = Path(os.environ.get("OSPREY_TESTDATA", ROOT.parent / "shared" / "testdata"))
    images = base / "images" if (base / "images").is_dir() else base
    found = sorted(p for p in (images / "valid" / "jpeg").rglob("*.jpg") if p.stat().st_size > 50_000)
    return found


def make_inputs(directory):
    """COUNT 640x480 baseline JPEGs (q90) from the corpus's photos (those ImageMagick reads), or from ImageMagick's
    own pictures when the corpus is absent."""
    sources = corpus_jpegs()
    inputs = []
    for source in sources:
        if len(inputs) == COUNT:
            break
        path = directory / f"in{len(inputs):03}.jpg"
        made = subprocess.run([MAGICK, str(source), "-auto-orient", "-resize", "640x480!", "-strip", "-quality", "90",
                               str(path)], stderr=subprocess.DEVNULL)
        if made.returncode == 0:
            inputs.append(path)
    while len(inputs) < COUNT:
        path = directory / f"in{len(inputs):03}.jpg"
        subprocess.run([MAGICK, "-size", "1280x960", "-seed", str(len(inputs)), "plasma:fractal", "-resize",
                        "640x480!", "-quality", "90", str(path)], check=True, stderr=subprocess.DEVNULL)
        inputs.append(path)
    return inputs, bool(sources)


def install(built, root):
    """osprey (and osprey-proxy) copied under `root` as `make install` copies them, and the path of osprey.

    The installed file is what a user runs, and it starts faster than the linker's own output: the same executable
    measured 0.4 ms apart, written by the linker or by a copy (docs/benchmarks.md)."""
    (root / "bin").mkdir()
    (root / "libexec" / "osprey").mkdir(parents=True)
    subprocess.run(["install", "-m", "755", str(built), str(root / "bin" / "osprey")], check=True)
    subprocess.run(["install", "-m", "755", str(built.parent / "osprey-proxy"),
                    str(root / "libexec" / "osprey" / "osprey-proxy")], check=True)
    return root / "bin" / "osprey"


def wall(command):
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def startup(osprey):
    commands = {
        "osprey --version": [str(osprey), "--version"],
        "djpeg -version": ["djpeg", "-version"],
        "convert -version": [MAGICK, "-version"],
    }
    times = {name: [] for name in commands}
    for _ in range(RUNS):
        for name, command in commands.items():
            times[name].append(wall(command) * 1000)
    print(f"start-up, wall time of {RUNS} runs each, interleaved:")
    for name, values in times.items():
        values.sort()
        print(f"  {name:18} median {statistics.median(values):6.2f} ms   p90 {values[int(len(values) * 0.9)]:6.2f} ms")
    median = statistics.median(times["osprey --version"])
    magick = statistics.median(times["convert -version"])
    verdict = "PASS" if record("startup", "osprey --version (ms)", median, 5, higher_is_better=False) else "FAIL"
    print(f"  osprey {median:.2f} ms (target <= 5 ms: {verdict}), {median / magick:.2f}x ImageMagick's start-up time")


def thumbnails(osprey, inputs, out):
    def osprey_job():
        for path in inputs:
            subprocess.run([str(osprey), "convert", str(path), str(out / path.name), "--resize", "256x256",
                            "--quality", "80"], check=True, stdout=subprocess.DEVNULL)

    def magick_job():
        for path in inputs:
            subprocess.run([MAGICK, str(path), "-resize", "256x256", "-quality", "80", str(out / path.name)],
                           check=True)

    best = {"osprey": float("inf"), "ImageMagick": float("inf")}
    for _ in range(ROUNDS):
        for name, job in (("osprey", osprey_job), ("ImageMagick", magick_job)):
            started = time.perf_counter()
            job()
            best[name] = min(best[name], time.perf_counter() - started)
    rates = {name: len(inputs) / seconds for name, seconds in best.items()}
    ratio = rates["osprey"] / rates["ImageMagick"]
    print(f"thumbnail job, one process per image, {len(inputs)} 640x480 JPEGs -> 256x256 q80, best of {ROUNDS}:")
    for name, rate in rates.items():
        print(f"  {name:12} {rate:7.1f} images/s")
    faster = record("startup", "thumbnail per process vs ImageMagick", ratio, 1.0)
    print(f"  osprey / ImageMagick: {ratio:.2f}x (target >= 1.0x: {'PASS' if faster else 'FAIL'})")


def main():
    missing = [package for command, package in (("djpeg", "libjpeg-turbo-progs"), (MAGICK, "imagemagick"))
               if not shutil.which(command)]
    apt_install(missing)
    built = build_osprey()
    with tempfile.TemporaryDirectory(prefix="osprey-startup-") as work:
        work = Path(work)
        osprey = install(built, work)
        startup(osprey)
        (work / "out").mkdir()
        inputs, from_corpus = make_inputs(work)
        if not from_corpus:
            print("(no corpus: inputs are ImageMagick's plasma pictures)")
        thumbnails(osprey, inputs, work / "out")


if __name__ == "__main__":
    sys.exit(main())
