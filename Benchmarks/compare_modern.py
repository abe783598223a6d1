#!/usr/bin/env python3
"""AVIF, HEIC and JPEG XL in Osprey beside libvips (pyvips), Pillow and each format's own tools, in one run.

Inputs: the 1920x1080 and 4000x3000 photos the processor benchmark makes (from the corpus's 4032x3024 photo, or a
generated picture without the corpus), as PNG, encoded by each format's reference tool at settings a camera or a
site would use, so that no contender decodes its own output: AVIF by avifenc (speed 6, quantizer 18-22, 4:2:0),
HEIC by heif-enc (x265, quality 50, 4:2:0, as a phone's), JPEG XL by cjxl (distance 1, effort 7: its defaults).
Release builds; alternating rounds, best time kept.

Measured, with the targets of the modern-formats issue:
  - decode (to RGB in memory): Osprey's codec-throughput >= 1.0x the best in-process peer: pyvips from its wheel
    (libvips 8.18; its libheif has no HEVC), pyvips on Debian's libvips 8.14 (libheif with libde265, libjxl 0.7),
    Pillow (AVIF only); the command-line decoder (avifdec, heif-convert, djxl) printed beside them;
  - encode at the same settings, one thread: AVIF quality 80 = quantizer 13, speed 8, 4:2:0 against avifenc from
    Y4M; JPEG XL quality 80 = distance 1.0, effort 4 against cjxl from PPM (both peers read the cheapest input and
    convert no colour, stricter than Osprey's own job); Osprey >= 0.95x; the peer from PNG printed beside it;
  - the thumbnail job (decode, fit 256x256, JPEG q80): Osprey's processor-benchmark >= 1.0x the faster pyvips'
    thumbnail.
Decoders run as they deploy: Osprey with dav1d's two threads from a megapixel (AVIF) and one thread otherwise,
pyvips at its default concurrency, the tools at theirs; CPU seconds are printed beside wall time.
FORMATS=avif,heic,jxl (the default) picks the formats.
"""
import json, os, shutil, subprocess, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import HERE, apt_install, build, record, sh, venv_python  # noqa: E402
from compare_codecs import command_time  # noqa: E402
from compare_processors import DATA, MAKE_INPUTS, corpus_photo  # noqa: E402

ITERATIONS = int(os.environ.get("ITERATIONS", "7"))  # as compare_codecs, whose command_time runs it
ROUNDS = int(os.environ.get("ROUNDS", "2"))
SIZES = ((1920, 1080), (4000, 3000))
QUALITY = 80
AVIF_QUANTIZER = 13  # quality 80, as libavif 1.x maps quality to a quantizer (AVIFEncoder does the same)
AVIF_SPEED = 8
JXL_DISTANCE = "1.0"  # quality 80 through JXLEncoder.distance(forQuality:): 0.1 + 20 * 0.045
JXL_EFFORT = 4

PEERS = """
import sys, time, json
pillow = None
try:
    from PIL import Image as pillow
except ImportError:
    pass
import pyvips
pyvips.cache_set_max(0)
path, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def best(f):
    t = []
    for _ in range(n):
        s = time.perf_counter(); f(); t.append(time.perf_counter() - s)
    return min(t)
result = {}
try:
    if mode == "decode":
        def vips():
            image = pyvips.Image.new_from_file(path, access="sequential")
            image.write_to_memory()
        result["pyvips"] = best(vips)
    else:
        def thumbnail():
            pyvips.Image.thumbnail(path, 256, height=256).jpegsave_buffer(Q=80)
        result["pyvips"] = best(thumbnail)
except Exception as error:
    result["pyvips_error"] = str(error).strip().splitlines()[0]
if mode == "decode" and pillow is not None and path.endswith(".avif"):
    try:
        pillow.open(path).load()
        result["pillow"] = best(lambda: pillow.open(path).convert("RGB").tobytes())
    except Exception as error:
        result["pillow_error"] = str(error)
print(json.dumps(result))
"""


def json_of(args):
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])


def debian_pyvips():
    """A Python whose pyvips runs on Debian's libvips (with libheif, libde265 and libjxl), beside the wheel's."""
    apt_install([] if Path("/usr/lib/x86_64-linux-gnu/libvips.so.42").exists() else ["libvips42"])
    python = HERE / ".venv-debian" / "bin" / "python"
    if not python.exists():
        sh(sys.executable, "-m", "venv", str(HERE / ".venv-debian"))
    if subprocess.run([str(python), "-c", "import pyvips"], capture_output=True).returncode != 0:
        sh(str(python), "-m", "pip", "install", "-q", "pyvips")  # no pyvips-binary: the system's libvips
    return str(python)


def make_input(fmt, png, out):
    if fmt == "avif":
        sh("avifenc", "-s", "6", "--min", "18", "--max", "22", "-y", "420", "-j", "2", str(png), str(out))
    elif fmt == "heic":
        sh("heif-enc", "-q", "50", "-o", str(out), str(png))
    else:
        sh("cjxl", "-d", "1", "-e", "7", str(png), str(out))


def modern_source(fmt, w, h, python):
    """The w x h photo in `fmt` (made as above, once), and its PNG and PPM beside it; returns the source's path."""
    work = DATA / "modern"
    work.mkdir(parents=True, exist_ok=True)
    if not (DATA / f"photo-{w}x{h}.jpeg").exists():
        photo = corpus_photo()
        subprocess.run([python, "-c", MAKE_INPUTS, str(photo) if photo else "", str(DATA)], check=True)
    label = f"{w}x{h}"
    png = work / f"photo-{label}.png"
    if not png.exists():
        sh(python, "-c", "import sys; from PIL import Image; im = Image.open(sys.argv[1]).convert('RGB'); "
           "im.save(sys.argv[2]); im.save(sys.argv[3])", str(DATA / f"photo-{label}.jpeg"), str(png),
           str(work / f"photo-{label}.ppm"))
    source = work / f"photo-{label}.{fmt}"
    if not source.exists():
        make_input(fmt, png, source)
    return source


def tool_decode(fmt, path, work):
    """The command-line decoder's time, writing the cheapest output it has."""
    if fmt == "avif":
        return "avifdec -j 2 to Y4M", command_time(["avifdec", "-j", "2", str(path), str(work / "out.y4m")])
    if fmt == "heic":
        return "heif-convert to Y4M", command_time(["heif-convert", "--quiet", str(path), str(work / "out.y4m")])
    return "djxl to PPM", command_time(["djxl", str(path), str(work / "out.ppm")])


def encodes(fmt, png, work, processor, label):
    """Osprey's encode, the peer from PNG and the peer from its cheapest input, in seconds (None: not encoded)."""
    if fmt == "heic":
        return None
    runs = str(max(ITERATIONS // 2, 2))
    ours = json_of([str(processor), f"encode-{fmt}", str(png), runs, str(work / f"ours-{label}.{fmt}"),
                    str(QUALITY), str(AVIF_SPEED if fmt == "avif" else JXL_EFFORT)])["best"]
    if fmt == "avif":
        y4m = work / f"photo-{label}.y4m"
        if not y4m.exists():
            sh("avifdec", str(work / f"photo-{label}.avif"), str(y4m))
        settings = ["-s", str(AVIF_SPEED), "-j", "1", "--min", str(AVIF_QUANTIZER), "--max", str(AVIF_QUANTIZER)]
        from_png = command_time(["avifenc", *settings, "-y", "420", str(png), str(work / f"theirs-{label}.avif")])
        cheapest = command_time(["avifenc", *settings, str(y4m), str(work / "theirs-cheapest.avif")])
    else:
        ppm = work / f"photo-{label}.ppm"  # the PNG's pixels, written beside it
        settings = ["-d", JXL_DISTANCE, "-e", str(JXL_EFFORT), "--num_threads=0", "--quiet"]
        from_png = command_time(["cjxl", *settings, str(png), str(work / f"theirs-{label}.jxl")])
        cheapest = command_time(["cjxl", *settings, str(ppm), str(work / "theirs-cheapest.jxl")])
    return ours, from_png, cheapest


def main():
    formats = os.environ.get("FORMATS", "avif,heic,jxl").split(",")
    apt_install([package for package, tool in (("libavif-bin", "avifenc"), ("libheif-examples", "heif-enc"),
                                               ("libjxl-tools", "cjxl")) if not shutil.which(tool)])
    wheel = str(venv_python(["PIL", "pyvips"], ["pillow", "pyvips", "pyvips-binary"]))
    debian = debian_pyvips()
    codec = build("codec-throughput")
    processor = build("processor-benchmark")
    work = DATA / "modern"
    failures = []
    for w, h in SIZES:
        label = f"{w}x{h}"
        png = work / f"photo-{label}.png"
        for fmt in formats:
            source = modern_source(fmt, w, h, wheel)
            best, notes = {}, {}

            def keep(key, value):
                if value is not None:
                    best[key] = min(best.get(key, value), value)

            for _ in range(ROUNDS):
                ours = json_of([str(codec), str(source), str(ITERATIONS), "--keep-orientation"])
                keep("ours", ours["best"])
                keep("ours_cpu", ours["cpu"])
                for name, python in (("wheel", wheel), ("debian", debian)):
                    for mode in ("decode", "thumbnail"):
                        peer = json_of([python, "-c", PEERS, str(source), str(ITERATIONS), mode])
                        keep(f"{name}_{mode}", peer.get("pyvips"))
                        if mode == "decode":
                            keep("pillow", peer.get("pillow"))
                        for key in ("pyvips_error", "pillow_error"):
                            if key in peer:
                                notes[f"{name}_{mode}_{key}"] = peer[key]
                tool, seconds = tool_decode(fmt, source, work)
                keep("tool", seconds)
                encoded = encodes(fmt, png, work, processor, label)
                if encoded:
                    for key, value in zip(("encode", "peer_png", "peer_cheapest"), encoded):
                        keep(key, value)
                thumb = json_of([str(processor), "thumbnail", str(source), str(ITERATIONS), str(work / "thumb.jpg")])
                keep("thumb", thumb["best"])

            def ms(key):
                return f"{best[key] * 1e3:.1f} ms" if key in best else "cannot"

            in_process = [best[k] for k in ("wheel_decode", "debian_decode", "pillow") if k in best]
            decode_ratio = min(in_process) / best["ours"]
            print(f"{fmt} {label} ({source.stat().st_size} B): decode Osprey {ms('ours')} "
                  f"({w * h / 1e6 / best['ours']:.0f} MP/s, CPU {ms('ours_cpu')}), pyvips wheel {ms('wheel_decode')}, "
                  f"pyvips Debian {ms('debian_decode')}, Pillow {ms('pillow')}, {tool} {ms('tool')}: "
                  f"{decode_ratio:.2f}x the best in-process peer", flush=True)
            for key, note in notes.items():
                print(f"    ({key.replace('_', ' ')}: {note[:70]})")
            results = [("decode", decode_ratio, 1.0)]
            if "encode" in best:
                peer = "avifenc" if fmt == "avif" else "cjxl"
                cheapest = "Y4M" if fmt == "avif" else "PPM"
                encode_ratio = best["peer_cheapest"] / best["encode"]
                ours_size = (work / f"ours-{label}.{fmt}").stat().st_size
                theirs_size = (work / f"theirs-{label}.{fmt}").stat().st_size
                print(f"{fmt} {label}: encode q{QUALITY} Osprey {best['encode'] * 1e3:.0f} ms (RGB conversion "
                      f"included), {peer} from PNG {best['peer_png'] * 1e3:.0f} ms, from {cheapest} "
                      f"{best['peer_cheapest'] * 1e3:.0f} ms: {encode_ratio:.2f}x; sizes Osprey {ours_size} B, "
                      f"{peer} from PNG {theirs_size} B", flush=True)
                results.append(("encode", encode_ratio, 0.95))
            vips_thumb = min(best[k] for k in ("wheel_thumbnail", "debian_thumbnail") if k in best)
            thumb_ratio = vips_thumb / best["thumb"]
            print(f"{fmt} {label}: thumbnail (fit 256, JPEG q80) Osprey {ms('thumb')}, pyvips wheel "
                  f"{ms('wheel_thumbnail')}, Debian {ms('debian_thumbnail')}: {thumb_ratio:.2f}x", flush=True)
            results.append(("thumbnail", thumb_ratio, 1.0))
            failures += [f"{fmt} {name} {label} {value:.2f}x < {target}x" for name, value, target in results
                         if not record("modern", f"{fmt} {name} {label}", value, target)]
    print("targets:", "PASS" if not failures else "FAIL: " + "; ".join(failures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
