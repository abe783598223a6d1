#!/usr/bin/env python3
"""The encoders' effort: bytes against time for WebP, AVIF and JPEG XL, on the corpus photos, in one run.

The 15 corpus photos compare_quality.py uses (still JPEG and WebP of at least 500x400 and 60 KB), each fit inside
1024x1024 by Osprey, encoded by `processor-benchmark auto FILE 1 OUT FORMAT q80 EFFORT` (one thread, release build) at
quality 80 (imgproxy's default for AVIF and JPEG XL; WebP's is 79) for each effort of EncodingOptions.setEffort's
scale (1 fastest to 9 smallest) that sets a setting of its own, and at the format's default: total bytes, total encode
time and the mean SSIMULACRA 2 score, each beside the default's. What the defaults (WebP method 4, AVIF speed 8,
JPEG XL effort 4) and the proxy's --max-effort (6) stand on; nothing is a target here. EFFORT_FORMATS=webp,avif,jxl
picks the formats.
"""
import json, os, subprocess, tempfile
from pathlib import Path

from benchkit import build
from compare_quality import corpus_photos

FORMATS = os.environ.get("EFFORT_FORMATS", "webp,avif,jxl").split(",")


def setting(form, effort):
    """The encoder's own setting EncodingOptions.setEffort(effort) gives, as its name says it."""
    if form == "webp":
        return f"method {(effort - 1) * 6 // 8}"
    if form == "avif":
        return f"speed {10 - effort}"
    return f"effort {effort}"


DEFAULTS = {"webp": "method 4", "avif": "speed 8", "jxl": "effort 4"}


def main():
    benchmark = str(build("processor-benchmark"))
    photos = corpus_photos()
    with tempfile.TemporaryDirectory() as directory:
        output = str(Path(directory) / "out")
        print(f"encoder effort on {len(photos)} corpus photos fit inside 1024x1024, quality 80, one thread:")
        for form in FORMATS:
            runs = [("default", None)]
            seen = {DEFAULTS[form]}
            for effort in range(1, 10):
                if setting(form, effort) not in seen:
                    seen.add(setting(form, effort))
                    runs.append((f"effort {effort}", effort))
            rows = []
            for label, effort in runs:
                total_bytes, total_time, scores = 0, 0.0, []
                for photo in photos:
                    command = [benchmark, "auto", str(photo), "1", output, form, "q80"]
                    if effort is not None:
                        command.append(str(effort))
                    line = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
                    total_bytes += line["bytes"]
                    total_time += line["best"]
                    scores.append(line["score"])
                rows.append((label, effort, total_bytes, total_time, sum(scores) / len(scores)))
            base = rows[0]
            for label, effort, total_bytes, total_time, score in rows:
                name = f"{label} ({setting(form, effort) if effort else DEFAULTS[form]})"
                print(f"  {form:4} {name:22} {total_bytes:10,d} B ({total_bytes / base[2]:.3f}x)  "
                      f"{total_time * 1e3:8.0f} ms ({total_time / base[3]:.2f}x)  mean score {score:.2f}", flush=True)


if __name__ == "__main__":
    main()
