#!/usr/bin/env python3
"""SSIMULACRA 2 beside its PyPI reference (`ssimulacra2`), on the same pairs, in one run.

Corpus photos (../shared/testdata or $OSPREY_TESTDATA: still JPEG and WebP files of at least 500x400 and 60 KB, in
manifest order) are resized by Pillow to 1024 px on their longer side, saved as PNG, and re-encoded by Pillow as JPEG
q30, JPEG q75 and WebP q85 (saved back as PNG: both tools read the same pixels). For each pair:

  - the reference's score and time (compute_ssimulacra2 in-process, best of ROUNDS, PNG reading included);
  - Osprey's score and time (processor-benchmark ssimulacra2: ImageQuality.ssimulacra2 on decoded pixels, best of
    ITERATIONS), and its time per candidate against a reference prepared once (what q=auto pays);
  - the difference of the scores.

Target: Osprey at least 3x faster than the reference over all pairs; scores within 1.0 (the tests hold the same).
Single thread each. PHOTOS=N changes how many photos (6).
"""
import json, os, subprocess, sys, tempfile, time
from pathlib import Path

from benchkit import build, venv_python

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PHOTOS = int(os.environ.get("PHOTOS", "6"))
ITERATIONS = int(os.environ.get("ITERATIONS", "5"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
DISTORTIONS = (("JPEG", 30), ("JPEG", 75), ("WEBP", 85))


def corpus_photos():
    base = Path(os.environ.get("OSPREY_TESTDATA", ROOT.parent / "shared" / "testdata"))
    images = base / "images"
    manifest = images / "MANIFEST.tsv"
    if not manifest.exists():
        sys.exit(f"compare_quality: no corpus at {base} (set OSPREY_TESTDATA)")
    rows = [line.split("\t") for line in manifest.read_text().splitlines()[1:]]
    photos = [images / row[0] for row in rows
              if row[4] in ("jpeg", "webp") and row[8] == "decode-ok" and row[7] == "1" and int(row[5]) >= 500
              and int(row[6]) >= 400 and int(row[12]) >= 60000 and "cmyk" not in row[0]]
    return photos[:PHOTOS]


MAKE_PAIRS = """
import sys
from PIL import Image, ImageOps
out = sys.argv[1]
for index, path in enumerate(sys.argv[2:]):
    im = ImageOps.exif_transpose(Image.open(path)).convert("RGB")
    scale = 1024 / max(im.size)
    im = im.resize((round(im.width * scale), round(im.height * scale)), Image.LANCZOS)
    # Without the source's colour profile (a P3 photo's would make Osprey convert what the reference reads as is).
    im = Image.frombytes("RGB", im.size, im.tobytes())
    im.save(f"{out}/{index}.png")
    for form, quality in %r:
        name = f"{out}/{index}-{form.lower()}{quality}"
        im.save(name + "." + form.lower(), form, quality=quality)
        Image.open(name + "." + form.lower()).convert("RGB").save(name + ".png")
        print(f"{index}.png {index}-{form.lower()}{quality}.png")
""" % (DISTORTIONS,)

REFERENCE = """
import sys, time, json
from ssimulacra2 import compute_ssimulacra2
directory, rounds = sys.argv[1], int(sys.argv[2])
for line in sys.stdin:
    reference, distorted = line.split()
    best = None
    for _ in range(rounds):
        start = time.perf_counter()
        score = compute_ssimulacra2(f"{directory}/{reference}", f"{directory}/{distorted}")
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    print(json.dumps({"score": score, "seconds": best}), flush=True)
"""


def main():
    python = str(venv_python(["PIL", "ssimulacra2"], ["Pillow", "ssimulacra2==0.3.0"]))
    benchmark = build("processor-benchmark")
    photos = corpus_photos()
    work = Path(tempfile.mkdtemp(prefix="osprey-quality-bench-"))
    pairs = subprocess.run([python, "-c", MAKE_PAIRS, str(work)] + [str(p) for p in photos], check=True,
                           capture_output=True, text=True).stdout.split("\n")
    pairs = [pair.split() for pair in pairs if pair]
    reference = subprocess.run([python, "-c", REFERENCE, str(work), str(ROUNDS)], check=True, capture_output=True,
                               text=True, input="\n".join(" ".join(pair) for pair in pairs)).stdout.splitlines()
    for index, photo in enumerate(photos):
        print(f"  {index}: {photo.relative_to(photo.parents[2])}")
    print(f"SSIMULACRA 2 on {len(pairs)} pairs ({len(photos)} corpus photos at 1024 px; "
          f"{', '.join(f'{f} q{q}' for f, q in DISTORTIONS)}), one thread each")
    print(f"  {'pair':34} {'reference':>10} {'osprey':>10} {'diff':>6} {'PyPI ms':>9} {'osprey ms':>10} "
          f"{'candidate ms':>13}")
    totals = {"reference": 0.0, "osprey": 0.0, "candidate": 0.0}
    worst = 0.0
    for (ref, dist), line in zip(pairs, reference):
        theirs = json.loads(line)
        output = subprocess.run([str(benchmark), "ssimulacra2", str(work / ref), str(ITERATIONS), str(work / dist)],
                                check=True, capture_output=True, text=True).stdout
        ours = json.loads(output)
        difference = ours["score"] - theirs["score"]
        worst = max(worst, abs(difference))
        totals["reference"] += theirs["seconds"]
        totals["osprey"] += ours["best"]
        totals["candidate"] += ours["candidate"]
        print(f"  {ref + ' ' + dist:34} {theirs['score']:10.4f} {ours['score']:10.4f} {difference:6.3f} "
              f"{theirs['seconds'] * 1e3:9.1f} {ours['best'] * 1e3:10.2f} {ours['candidate'] * 1e3:13.2f}", flush=True)
    ratio = totals["reference"] / totals["osprey"]
    print(f"  total: reference {totals['reference']:.2f} s, osprey {totals['osprey']:.3f} s "
          f"({totals['candidate']:.3f} s per candidate against a prepared reference); worst difference {worst:.3f}")
    print(f"  speed vs PyPI ssimulacra2: {ratio:.1f}x (target 3.0x) {'PASS' if ratio >= 3 else 'FAIL'}; "
          f"scores within 1.0: {'PASS' if worst <= 1.0 else 'FAIL'}")


if __name__ == "__main__":
    main()
