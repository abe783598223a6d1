#!/usr/bin/env python3
"""Palette PNG beside pngquant (Debian's), and the deflate level of lossless PNG, in one run.

Inputs: the corpus photos compare_quality.py uses (still JPEG and WebP of at least 500x400 and 60 KB), resized by
Pillow to 1024 px on their longer side and saved as truecolour PNG, and the corpus's own PNG photos (some with alpha).

Palette: for each QUALITIES value Q (80,50), `osprey convert IN OUT.png --quality Q` beside
`pngquant --quality 0-Q --output OUT IN` (both quantise with libimagequant at speed 4, dithered): each a whole process
as a user runs it, wall time best of ROUNDS (3), and the output's bytes. Every output is checked: a palette of at most
256 colours, and transparency kept where the input had some. Targets: total bytes at most 1.05x pngquant's, total
time at most 1.0x.

PASS or FAIL is printed beside each target (the exit status is 0 either way, so that `make bench` goes on).

Deflate level: processor-benchmark encode-png on the same inputs at zlib levels 1, 3, 6 (the default) and 9, lossless:
total bytes and encode time, printed (the measurement the default stands on).
"""
import json, os, shutil, subprocess, tempfile, time
from pathlib import Path

from benchkit import apt_install, build, build_osprey, record, venv_python
from compare_quality import FIT_1024, corpus_photos

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
QUALITIES = [int(q) for q in os.environ.get("QUALITIES", "80,50").split(",")]
ROUNDS = int(os.environ.get("ROUNDS", "3"))
LEVELS = (1, 3, 6, 9)

MAKE_INPUTS = FIT_1024 + """
for index, path in enumerate(sys.argv[2:]):
    fit_1024(path).save(f"{sys.argv[1]}/photo-{index}.png")
"""

CHECK = """
import sys, json
from PIL import Image
for line in sys.stdin:
    source, output = line.split()
    im, src = Image.open(output), Image.open(source)
    alpha = src.mode in ("RGBA", "LA") and src.getextrema()[-1][0] < 255
    colours = len(im.convert("RGBA").getcolors(1 << 24))
    kept = not alpha or im.convert("RGBA").getextrema()[-1][0] < 255
    print(json.dumps({"palette": im.mode == "P", "colours": colours, "alpha": alpha, "kept": kept}), flush=True)
"""


def timed(command):
    best = None
    for _ in range(ROUNDS):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best


def main():
    if shutil.which("pngquant") is None:
        apt_install(["pngquant"])
    python = str(venv_python(["PIL"], ["Pillow"]))
    osprey = str(build_osprey())
    benchmark = str(build("processor-benchmark"))
    corpus = Path(os.environ.get("OSPREY_TESTDATA", ROOT.parent / "shared" / "testdata")) / "images"
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        subprocess.run([python, "-c", MAKE_INPUTS, directory, *map(str, corpus_photos())], check=True)
        inputs = sorted(work.glob("photo-*.png")) + sorted((corpus / "valid" / "png" / "photos").glob("*.png"))
        version = subprocess.run(["pngquant", "--version"], capture_output=True, text=True).stdout.split()[0]
        print(f"palette PNG: {len(inputs)} inputs (corpus photos at 1024 px, the corpus's PNG photos), "
              f"osprey convert --quality Q beside pngquant {version} --quality 0-Q, best of {ROUNDS}")
        for quality in QUALITIES:
            totals = {"osprey": [0, 0.0], "pngquant": [0, 0.0]}
            pairs = []
            for source in inputs:
                ours, theirs = work / f"ours-{quality}-{source.name}", work / f"pq-{quality}-{source.name}"
                ours_time = timed([osprey, "convert", str(source), str(ours), "--quality", str(quality)])
                theirs_time = timed(["pngquant", "--force", "--speed", "4", "--quality", f"0-{quality}", "--output",
                                     str(theirs), str(source)])
                for name, path, seconds in (("osprey", ours, ours_time), ("pngquant", theirs, theirs_time)):
                    totals[name][0] += path.stat().st_size
                    totals[name][1] += seconds
                print(f"  q{quality} {source.name[:28]:28} osprey {ours.stat().st_size:9,d} B {ours_time * 1e3:7.1f} ms"
                      f"   pngquant {theirs.stat().st_size:9,d} B {theirs_time * 1e3:7.1f} ms", flush=True)
                pairs.append(f"{source} {ours}\n")
            checks = subprocess.run([python, "-c", CHECK], input="".join(pairs), capture_output=True, text=True,
                                    check=True).stdout.splitlines()
            faults = [line for line in checks
                      if not (json.loads(line)["palette"] and json.loads(line)["colours"] <= 256
                              and json.loads(line)["kept"])]
            bytes_ratio = totals["osprey"][0] / totals["pngquant"][0]
            time_ratio = totals["osprey"][1] / totals["pngquant"][1]
            small = record("palette", f"q{quality} bytes vs pngquant", bytes_ratio, 1.05, higher_is_better=False)
            quick = record("palette", f"q{quality} time vs pngquant", time_ratio, 1.0, higher_is_better=False)
            print(f"q{quality}: osprey {totals['osprey'][0]:,d} B in {totals['osprey'][1]:.3f} s, pngquant "
                  f"{totals['pngquant'][0]:,d} B in {totals['pngquant'][1]:.3f} s: bytes {bytes_ratio:.3f}x "
                  f"(target <= 1.05: {'PASS' if small else 'FAIL'}), time {time_ratio:.3f}x "
                  f"(target <= 1.0: {'PASS' if quick else 'FAIL'}); "
                  f"{len(checks) - len(faults)}/{len(checks)} outputs a palette of <= 256 colours with alpha kept")

        print(f"lossless PNG by zlib level (processor-benchmark encode-png, best of {ROUNDS}, {len(inputs)} inputs):")
        for level in LEVELS:
            total_bytes, total_time = 0, 0.0
            for source in inputs:
                line = subprocess.run([benchmark, "encode-png", str(source), str(ROUNDS), str(work / "level.png"),
                                       str(level)], capture_output=True, text=True, check=True).stdout
                total_time += json.loads(line)["best"]
                total_bytes += (work / "level.png").stat().st_size
            print(f"  level {level}: {total_bytes:,d} B, {total_time * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
