#!/usr/bin/env python3
"""AVIF in Osprey beside libvips (pyvips), Pillow and libavif's own tools (avifdec, avifenc), in one run.

Inputs: the 1920x1080 and 4000x3000 photos the processor benchmark makes (from the corpus's 4032x3024 photo, or a
generated picture without the corpus), as PNG, encoded to AVIF by avifenc (speed 6, quantizer 18-22, 4:2:0), so
that no contender decodes its own output. Release builds; alternating rounds, best time kept.

Measured, with the targets of the modern-formats issue:
  - decode (to RGB in memory): Osprey's codec-throughput >= 1.0x the best in-process peer (pyvips, Pillow);
    avifdec writing YUV (.y4m, no RGB conversion) beside it;
  - encode at the same settings (quality 80 = quantizer 13, speed 8, 4:2:0, one thread): Osprey >= 0.95x avifenc
    from Y4M (no PNG read, no RGB conversion: stricter than Osprey's own job), avifenc from PNG printed beside it;
  - the thumbnail job (decode, fit 256x256, JPEG q80): Osprey's processor-benchmark >= 1.0x pyvips' thumbnail.
Decoders run as they deploy: Osprey with dav1d's two threads from a megapixel, pyvips at its default concurrency,
avifdec with -j 2; CPU seconds are printed beside wall time.
"""
import json, os, re, shutil, subprocess, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import apt_install, build, sh, venv_python  # noqa: E402
from compare_codecs import command_time  # noqa: E402
from compare_processors import DATA, MAKE_INPUTS, corpus_photo  # noqa: E402

ITERATIONS = int(os.environ.get("ITERATIONS", "7"))  # as compare_codecs, whose command_time runs it
ROUNDS = int(os.environ.get("ROUNDS", "2"))
SIZES = ((1920, 1080), (4000, 3000))
QUANTIZER = 13  # Osprey's quality 80, as libavif 1.x maps quality to a quantizer
SPEED = 8

PEERS = """
import sys, time, json
from PIL import Image
import pyvips
pyvips.cache_set_max(0)
path, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def best(f):
    t = []
    for _ in range(n):
        s = time.perf_counter(); f(); t.append(time.perf_counter() - s)
    return min(t)
result = {}
if mode == "decode":
    def vips():
        image = pyvips.Image.new_from_file(path, access="sequential")
        image.write_to_memory()
    result["pyvips"] = best(vips)
    try:
        Image.open(path).load()
        result["pillow"] = best(lambda: Image.open(path).convert("RGB").tobytes())
    except Exception as error:
        result["pillow_error"] = str(error)
else:
    def thumbnail():
        pyvips.Image.thumbnail(path, 256, height=256).jpegsave_buffer(Q=80)
    result["pyvips"] = best(thumbnail)
print(json.dumps(result))
"""


def json_of(args):
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])


def main():
    apt_install([package for package, tool in (("libavif-bin", "avifenc"),) if not shutil.which(tool)])
    python = str(venv_python(["PIL", "pyvips"], ["pillow", "pyvips", "pyvips-binary"]))
    codec = build("codec-throughput")
    processor = build("processor-benchmark")
    DATA.mkdir(parents=True, exist_ok=True)
    if not (DATA / "photo-4000x3000.jpeg").exists():
        photo = corpus_photo()
        subprocess.run([python, "-c", MAKE_INPUTS, str(photo) if photo else "", str(DATA)], check=True)
    work = DATA / "avif"
    work.mkdir(exist_ok=True)
    failures = []
    for w, h in SIZES:
        png = work / f"photo-{w}x{h}.png"
        avif = work / f"photo-{w}x{h}.avif"
        if not avif.exists():
            sh(python, "-c", "import sys; from PIL import Image; Image.open(sys.argv[1]).convert('RGB').save(sys.argv[2])",
               str(DATA / f"photo-{w}x{h}.jpeg"), str(png))
            sh("avifenc", "-s", "6", "--min", "18", "--max", "22", "-y", "420", "-j", "2", str(png), str(avif))
        label = f"{w}x{h}"
        best = {}
        for _ in range(ROUNDS):
            ours = json_of([str(codec), str(avif), str(ITERATIONS), "--keep-orientation"])
            peers = json_of([python, "-c", PEERS, str(avif), str(ITERATIONS), "decode"])
            avifdec = command_time(["avifdec", "-j", "2", str(avif), str(work / "out.y4m")])
            encode = json_of([str(processor), "encode-avif", str(png), str(max(ITERATIONS // 2, 2)),
                              str(work / "ours.avif"), "80", str(SPEED)])
            avifenc = command_time(["avifenc", "-s", str(SPEED), "-j", "1", "--min", str(QUANTIZER), "--max",
                                    str(QUANTIZER), "-y", "420", str(png), str(work / "theirs.avif")])
            # The same from Y4M: no PNG to read and no RGB to convert, so a floor for avifenc's encode alone.
            y4m = work / f"photo-{w}x{h}.y4m"
            if not y4m.exists():
                sh("avifdec", str(avif), str(y4m))
            avifenc_y4m = command_time(["avifenc", "-s", str(SPEED), "-j", "1", "--min", str(QUANTIZER), "--max",
                                        str(QUANTIZER), str(y4m), str(work / "theirs-y4m.avif")])
            thumb = json_of([str(processor), "thumbnail", str(avif), str(ITERATIONS), str(work / "thumb.jpg")])
            vips_thumb = json_of([python, "-c", PEERS, str(avif), str(ITERATIONS), "thumbnail"])
            for key, value in (("ours", ours["best"]), ("ours_cpu", ours["cpu"]), ("pyvips", peers["pyvips"]),
                               ("pillow", peers.get("pillow")), ("avifdec", avifdec), ("encode", encode["best"]),
                               ("avifenc", avifenc), ("avifenc_y4m", avifenc_y4m), ("thumb", thumb["best"]), ("vips_thumb", vips_thumb["pyvips"])):
                if value is not None:
                    best[key] = min(best.get(key, value), value)
            if "pillow_error" in peers:
                best["pillow_error"] = peers["pillow_error"]
        megapixels = w * h / 1e6
        in_process = min(v for k, v in best.items() if k in ("pyvips", "pillow"))
        decode_ratio = in_process / best["ours"]
        # Judged against avifenc from Y4M (the stricter: it reads no PNG and converts no RGB, which Osprey does).
        encode_ratio = best["avifenc_y4m"] / best["encode"]
        thumb_ratio = best["vips_thumb"] / best["thumb"]
        pillow = (f"Pillow {best['pillow'] * 1e3:.1f} ms" if "pillow" in best
                  else f"Pillow cannot ({best.get('pillow_error', '?')[:40]})")
        print(f"{label}: decode Osprey {best['ours'] * 1e3:.1f} ms ({megapixels / best['ours']:.0f} MP/s, CPU "
              f"{best['ours_cpu'] * 1e3:.1f} ms), pyvips {best['pyvips'] * 1e3:.1f} ms, {pillow}, avifdec to y4m "
              f"{best['avifdec'] * 1e3:.1f} ms: {decode_ratio:.2f}x the best in-process peer", flush=True)
        print(f"{label}: encode q80 speed {SPEED} Osprey {best['encode'] * 1e3:.0f} ms (RGB to YUV included), "
              f"avifenc from PNG {best['avifenc'] * 1e3:.0f} ms ({best['avifenc'] / best['encode']:.2f}x), from Y4M "
              f"{best['avifenc_y4m'] * 1e3:.0f} ms: {encode_ratio:.2f}x; sizes Osprey "
              f"{(work / 'ours.avif').stat().st_size} B, avifenc {(work / 'theirs.avif').stat().st_size} B", flush=True)
        print(f"{label}: thumbnail (fit 256, JPEG q80) Osprey {best['thumb'] * 1e3:.1f} ms, pyvips "
              f"{best['vips_thumb'] * 1e3:.1f} ms: {thumb_ratio:.2f}x", flush=True)
        for name, value, target in (("decode", decode_ratio, 1.0), ("encode", encode_ratio, 0.95),
                                    ("thumbnail", thumb_ratio, 1.0)):
            if value < target:
                failures.append(f"{name} {label} {value:.2f}x < {target}x")
    print("targets:", "PASS" if not failures else "FAIL: " + "; ".join(failures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
