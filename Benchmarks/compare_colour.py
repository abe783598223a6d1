#!/usr/bin/env python3
"""What colour management costs a decode, beside pyvips, in one run.

Inputs: the corpus's 4032x3024 phone photo (pixel3a_exif_rotated.jpg) as the camera wrote it, tagged with its sRGB
profile; and written to .build/bench-data, the photo without that profile (untagged), and tagged Display P3 instead
(an ICC profile Little CMS makes from the P3 primaries, D65 and sRGB's tone curve, as an APP2 segment: the pixels are
the photo's). Without the corpus, a generated picture tagged with Little CMS's sRGB profile stands in for the photo.
Every decode keeps the stored orientation, as the peers do.

Prints, for each, Osprey's decode with colour management on (the default: converted to sRGB) and off
(`--colour ignore`, which reads no profile: the decoder as it was before colour management), wall-clock and CPU
time, and pyvips loading the file and converting it with `icc_transform("srgb")` on one thread. Then the targets of
the colour issue with PASS/FAIL:

  - Display P3 to sRGB: at most 1.15x the wall time of the same decode with colour management off;
  - and at least 1.0x pyvips (load + icc_transform, one thread);
  - sRGB-tagged and untagged: within 1 % of the decode with colour management off.

With BASELINE=/path/to/codec-throughput, a build of the tool from before colour management (for instance from a
worktree of commit fb27670), the sRGB-tagged and untagged photos are also decoded by it in the same rounds: the
"within 1 % of today's" target measured against the old decoder itself.

Last, what a user runs: `osprey convert` of the P3 photo to JPEG, converting (the default) and with --keep-profile
(no conversion), best of ITERATIONS runs each.
"""
import ctypes, json, os, subprocess, sys, time
from pathlib import Path

from benchkit import build, build_osprey, record, sh, venv_python
from compare_codecs import corpus

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / ".build" / "bench-data"
ITERATIONS = int(os.environ.get("ITERATIONS", "9"))
# Osprey's two modes and the peer are measured in alternating rounds, each keeping its best time, so that a noisy
# spell on a shared machine lands on every side instead of on one.
ROUNDS = int(os.environ.get("ROUNDS", "5"))


def profiles():
    """(Display P3, sRGB) ICC profiles made by Little CMS."""
    lcms = ctypes.CDLL("liblcms2.so.2")
    lcms.cmsBuildParametricToneCurve.restype = ctypes.c_void_p
    lcms.cmsCreateRGBProfile.restype = ctypes.c_void_p
    lcms.cmsCreate_sRGBProfile.restype = ctypes.c_void_p

    class XyY(ctypes.Structure):
        _fields_ = [("x", ctypes.c_double), ("y", ctypes.c_double), ("Y", ctypes.c_double)]

    def saved(profile):
        size = ctypes.c_uint32(0)
        lcms.cmsSaveProfileToMem(ctypes.c_void_p(profile), None, ctypes.byref(size))
        buffer = ctypes.create_string_buffer(size.value)
        lcms.cmsSaveProfileToMem(ctypes.c_void_p(profile), buffer, ctypes.byref(size))
        return buffer.raw

    srgb_curve = (ctypes.c_double * 5)(2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045)
    curve = lcms.cmsBuildParametricToneCurve(None, 4, srgb_curve)
    curves = (ctypes.c_void_p * 3)(curve, curve, curve)
    white = XyY(0.3127, 0.3290, 1.0)
    primaries = (XyY * 3)(XyY(0.680, 0.320, 1.0), XyY(0.265, 0.690, 1.0), XyY(0.150, 0.060, 1.0))
    p3 = lcms.cmsCreateRGBProfile(ctypes.byref(white), primaries, curves)
    return saved(p3), saved(lcms.cmsCreate_sRGBProfile())


def without_profile(jpeg):
    """`jpeg` without its APP2 ICC_PROFILE segments."""
    at, kept = 2, jpeg[:2]
    while jpeg[at] == 0xFF and jpeg[at + 1] not in (0xDA, 0xD9):
        end = at + 2 + int.from_bytes(jpeg[at + 2:at + 4], "big")
        if not (jpeg[at + 1] == 0xE2 and jpeg[at + 4:at + 16] == b"ICC_PROFILE\0"):
            kept += jpeg[at:end]
        at = end
    return kept + jpeg[at:]


def tagged(jpeg, profile):
    """`jpeg` with `profile` in APP2 ICC_PROFILE segments, after its other APPn segments."""
    at = 2
    while jpeg[at] == 0xFF and 0xE0 <= jpeg[at + 1] <= 0xEF:
        at += 2 + int.from_bytes(jpeg[at + 2:at + 4], "big")
    chunks = [profile[i:i + 65519] for i in range(0, len(profile), 65519)]
    segments = b""
    for number, chunk in enumerate(chunks, 1):
        payload = b"ICC_PROFILE\0" + bytes([number, len(chunks)]) + chunk
        segments += b"\xff\xe2" + (len(payload) + 2).to_bytes(2, "big") + payload
    return jpeg[:at] + segments + jpeg[at:]


def inputs(python):
    DATA.mkdir(parents=True, exist_ok=True)
    images = corpus()
    photo = images / "valid/jpeg/large/pixel3a_exif_rotated.jpg" if images else None
    p3, srgb = profiles()
    if photo is None or not photo.exists():
        photo = DATA / "colour-photo.jpg"
        script = ("import sys\nfrom PIL import Image\nImage.effect_mandelbrot((4032, 3024), (-2.2, -1.3, 1.0, 1.3),"
                  " 90).convert('RGB').save(sys.argv[1], quality=92)")
        sh(str(python), "-c", script, str(photo))
        photo.write_bytes(tagged(photo.read_bytes(), srgb))
    untagged = without_profile(photo.read_bytes())
    made = {"display p3": DATA / "photo-p3.jpg", "untagged": DATA / "photo-untagged.jpg"}
    made["display p3"].write_bytes(tagged(untagged, p3))
    made["untagged"].write_bytes(untagged)
    return {"display p3": made["display p3"], "srgb-tagged": photo, "untagged": made["untagged"]}


def ours(tool, path, colour):
    args = [str(tool), str(path), str(ITERATIONS), "--keep-orientation", "--colour", colour]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)


def baseline(tool, path):
    args = [str(tool), str(path), str(ITERATIONS), "--keep-orientation"]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)


def pyvips_time(python, path):
    script = """
import os, sys, time, json
import pyvips
pyvips.cache_set_max(0)
path, n = sys.argv[1], int(sys.argv[2])
times = []
for _ in range(n):
    s = time.perf_counter()
    image = pyvips.Image.new_from_file(path, access="sequential")
    image.icc_transform("srgb").copy_memory()
    times.append(time.perf_counter() - s)
print(json.dumps(min(times)))
"""
    env = {**os.environ, "VIPS_CONCURRENCY": "1"}
    return json.loads(subprocess.run([str(python), "-c", script, str(path), str(ITERATIONS)], check=True,
                                     capture_output=True, text=True, env=env).stdout)


def cli_time(osprey, path, extra):
    out = DATA / "convert-out.jpg"
    best = None
    for _ in range(ITERATIONS):
        start = time.perf_counter()
        subprocess.run([str(osprey), "convert", str(path), str(out)] + extra, check=True)
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    out.unlink(missing_ok=True)
    return best


def main():
    python = venv_python(["PIL", "pyvips"], ["pillow", "pyvips", "pyvips-binary"])
    tool = build("codec-throughput")
    old_tool = os.environ.get("BASELINE")
    files = inputs(python)
    failures = []
    print(f"{'input':14} {'on ms':>8} {'on CPU':>8} {'off ms':>8} {'off CPU':>8} {'on/off':>7} {'pyvips ms':>10} "
          f"{'pyvips/on':>10}")
    for label, path in files.items():
        on, off, vips, old = None, None, None, None
        for _ in range(ROUNDS):
            if old_tool and label != "display p3":
                measured = baseline(old_tool, path)
                old = measured if old is None or measured["best"] < old["best"] else old
            measured = ours(tool, path, "convert")
            on = measured if on is None or measured["best"] < on["best"] else on
            measured = ours(tool, path, "ignore")
            off = measured if off is None or measured["best"] < off["best"] else off
            if label == "display p3":
                t = pyvips_time(python, path)
                vips = t if vips is None else min(vips, t)
        ratio = on["best"] / off["best"]
        vips_text = f"{vips * 1e3:10.1f} {vips / on['best']:9.2f}x" if vips else f"{'':10} {'':10}"
        print(f"{label:14} {on['best'] * 1e3:8.1f} {on['cpu'] * 1e3:8.1f} {off['best'] * 1e3:8.1f} "
              f"{off['cpu'] * 1e3:8.1f} {ratio:6.3f}x {vips_text}")
        if label == "display p3":
            if not record("colour", "Display P3 to sRGB cost vs no conversion", ratio, 1.15, higher_is_better=False):
                failures.append(f"Display P3 to sRGB costs {ratio:.3f}x the decode without (target 1.15x)")
            if not record("colour", "Display P3 to sRGB vs pyvips", vips / on["best"], 1.0):
                failures.append(f"Display P3 to sRGB is {vips / on['best']:.2f}x pyvips (target 1.0x)")
        elif not record("colour", f"{label} cost vs no colour management", ratio, 1.01, higher_is_better=False):
            failures.append(f"{label} decodes {ratio:.3f}x the decode without colour management (target 1.01x)")
        if old:
            before = on["best"] / old["best"]
            print(f"{'':14} before colour management: {old['best'] * 1e3:.1f} ms, now {before:.3f}x that")
            if not record("colour", f"{label} vs the decoder before", before, 1.01, higher_is_better=False):
                failures.append(f"{label} decodes {before:.3f}x the decoder before colour management (target 1.01x)")

    osprey = build_osprey()
    converting = cli_time(osprey, files["display p3"], [])
    keeping = cli_time(osprey, files["display p3"], ["--keep-profile"])
    print(f"\nosprey convert of the P3 photo to JPEG: {converting * 1e3:.0f} ms converting to sRGB, "
          f"{keeping * 1e3:.0f} ms keeping the profile ({converting / keeping:.3f}x)")
    print("\ntargets: " + ("PASS" if not failures else "FAIL\n  " + "\n  ".join(failures)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
