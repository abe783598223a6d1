#!/usr/bin/env python3
"""The charts of docs/benchmarks.md, drawn from the figures the comparison scripts recorded (benchkit.record) in
Benchmarks/results/*.json (each figure the last measured of its name): one SVG per comparison in docs/charts/, each figure as a bar at its share of its target
(1.0 is the target: right of the line passes, whether the target is a floor or a ceiling), green when it passes and
red when it does not, its value and target written beside it. `make bench` runs it last; run it alone to redraw from
the results of the last run of each script.
"""
import json, subprocess, sys
from pathlib import Path

from benchkit import HERE, RESULTS, venv_python

CHARTS = HERE.parent / "docs" / "charts"


def draw(results, pyplot):
    figures = results["figures"]
    # Where a figure stands against its target: above 1 it passes, whichever way the target points.
    shares = [(f["value"] / f["target"] if f["higher_is_better"] else f["target"] / f["value"]) if f["value"] and
              f["target"] else 0.0 for f in figures]
    height = 0.8 + 0.32 * len(figures)
    fig, axis = pyplot.subplots(figsize=(9, height))
    rows = range(len(figures))[::-1]
    # Far past the target, a bar is cut at three times it (its value is written beside it), so that the figures near
    # the line stay readable.
    limit = 3.0
    drawn = [min(share, limit) for share in shares]
    axis.barh(list(rows), drawn, color=["#3a8f4b" if f["ok"] else "#c0392b" for f in figures], height=0.6)
    axis.axvline(1.0, color="black", linewidth=1)
    axis.set_yticks(list(rows), [f["name"] for f in figures], fontsize=8)
    axis.set_xlabel("share of the target (1 = target met; cut at 3)", fontsize=8)
    axis.set_xlim(0, limit + 0.9)
    for row, share, f in zip(rows, drawn, figures):
        sign = ">=" if f["higher_is_better"] else "<="
        axis.text(share + 0.02, row, f"{f['value']:.3g} ({sign} {f['target']:.3g})", va="center", fontsize=7)
    dates = sorted({f.get("measured", results.get("measured", "?"))[:10] for f in figures})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    axis.set_title(f"{results['comparison']}, measured {when}", fontsize=9)
    axis.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    CHARTS.mkdir(parents=True, exist_ok=True)
    path = CHARTS / f"{results['comparison']}.svg"
    fig.savefig(path, format="svg", metadata={"Date": None})
    pyplot.close(fig)
    return path


def main():
    files = sorted(RESULTS.glob("*.json"))
    if not files:
        print("no recorded figures in Benchmarks/results: run the comparison scripts (make bench) first")
        return 0
    if "--in-venv" not in sys.argv:
        # matplotlib comes from PyPI into Benchmarks/.venv, as the other Python peers do.
        python = venv_python(["matplotlib"], ["matplotlib"])
        return subprocess.run([str(python), __file__, "--in-venv"]).returncode
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "osprey"  # The same figures give the same file.
    from matplotlib import pyplot
    for file in files:
        print("chart:", draw(json.loads(file.read_text()), pyplot).relative_to(HERE.parent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
