"""What the peer-comparison scripts share: running commands and building a release product of this package."""
import os, subprocess, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def sh(*args, **kw):
    return subprocess.run(args, check=True, **kw)


def build(product):
    """Builds `product` in release and returns the path of its executable."""
    command = ("swift", "build", "-c", "release", "--product", product)
    if subprocess.run(command, cwd=HERE).returncode != 0:
        # SwiftPM keeps a stale build plan for the root package's C target when a C file was added to it since
        # the last build here (undefined references at link time): start this package's build over once.
        sh("swift", "package", "clean", cwd=HERE)
        sh(*command, cwd=HERE)
    bin_path = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=HERE, check=True,
                              capture_output=True, text=True).stdout.strip()
    return Path(bin_path) / product


def build_osprey():
    """Builds the osprey command in release (in the repository's own package) and returns its path."""
    root = HERE.parent
    # By `make build`, as a deployment builds it (the Swift runtime and Foundation linked in, nothing exported).
    sh("make", "--no-print-directory", "build", cwd=root)
    bin_path = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=root, check=True,
                              capture_output=True, text=True).stdout.strip()
    return Path(bin_path) / "osprey"


def apt_install(packages):
    """Installs Debian `packages` (through sudo unless root)."""
    if packages:
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        sh(*sudo, "apt-get", "install", "-y", "-qq", *packages, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def venv_python(modules, packages):
    """The Python of the venv under Benchmarks/.venv, with `packages` installed unless `modules` already import."""
    python = HERE / ".venv" / "bin" / "python"
    if not python.exists():
        sh(sys.executable, "-m", "venv", str(HERE / ".venv"))
    if subprocess.run([str(python), "-c", "import " + ", ".join(modules)], capture_output=True).returncode != 0:
        sh(str(python), "-m", "pip", "install", "-q", *packages)
    return python


RESULTS = HERE / "results"
_results = {}


def record(comparison, name, value, target, higher_is_better=True):
    """Keeps one measured figure beside its target for `make bench`'s charts (charts.py), in
    Benchmarks/results/<comparison>.json: the figure of the same name there is replaced, the others kept, so that a
    run of some phases only (PROXY_BENCH_PHASES) leaves the other phases' last figures in place. Each figure carries
    the time it was measured. Returns whether it meets its target (at least `target`, or at most when not
    `higher_is_better`)."""
    import json, time
    ok = value >= target if higher_is_better else value <= target
    path = RESULTS / f"{comparison}.json"
    if comparison not in _results:  # Read once a run; written after each figure, so a run cut short keeps its own.
        try:
            _results[comparison] = json.loads(path.read_text())
        except (OSError, ValueError):
            _results[comparison] = {"comparison": comparison, "figures": []}
    results = _results[comparison]
    figures = [figure for figure in results.get("figures", []) if figure.get("name") != name]
    figures.append({"name": name, "value": value, "target": target, "higher_is_better": higher_is_better, "ok": ok,
                    "measured": time.strftime("%Y-%m-%d %H:%M")})
    results["figures"] = figures
    RESULTS.mkdir(exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")
    return ok
