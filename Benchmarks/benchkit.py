"""What the peer-comparison scripts share: running commands and building a release product of this package."""
import contextlib, os, shutil, subprocess, sys, tempfile
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


@contextlib.contextmanager
def scratch_filesystem(variable, size=8 << 30, direct_io=False):
    """The directory a benchmark's writers (its clients' files, its servers' caches) write under, and what it is:
    $`variable` when set; else, as root, an ext4 made for the run on a loop device, journaled as
    mkfs.ext4 makes it by default; else a temporary directory. With `direct_io` the loop device writes its backing
    file with direct I/O, as a disk takes writes, rather than through the page cache a second time on a kernel thread
    that takes CPU from the servers measured.

    Why not the temporary directory: an ext4 without a journal (this machine's root filesystem is one)
    skips, when it allocates an inode, every inode deleted in the last 60 to 360 seconds; after one round's files are
    removed, the next round's creations scan past all of them. Measured with a C program creating 1,000 files of 39 KB
    right after removing the last 1,000: 2,300 files/s on that root filesystem (436 ms of kernel CPU, 64% of it in
    recently_deleted and the block look-ups it makes), 11,000-12,000 on a fresh ext4 without a journal, 25,000-29,000
    on a fresh journaled one, 42,000 on tmpfs. That measures the filesystem's history, not the clients."""
    configured = os.environ.get(variable)
    if configured:
        yield Path(configured), variable
        return
    work = Path(tempfile.mkdtemp(prefix="osprey-bench-disk-"))
    mounted, device = False, None
    try:
        if os.geteuid() == 0 and shutil.which("mkfs.ext4"):
            image = work / "ext4.img"
            with open(image, "wb") as f:
                f.truncate(size)  # sparse: the disk holds what is written
            made = subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], capture_output=True)
            (work / "mnt").mkdir()
            if made.returncode == 0 and direct_io:
                loop = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", str(image)], capture_output=True,
                                      text=True)
                device = loop.stdout.strip() if loop.returncode == 0 else None
                mounted = bool(device) and subprocess.run(
                    ["mount", device, str(work / "mnt")], capture_output=True).returncode == 0
            elif made.returncode == 0:
                mounted = subprocess.run(
                    ["mount", "-o", "loop", str(image), str(work / "mnt")], capture_output=True).returncode == 0
        if mounted:
            yield work / "mnt", ("a journaled ext4 made for this run (loop device"
                                 + (", direct I/O to its file)" if device else ")"))
        else:
            yield work, f"the temporary directory (not root, or no mkfs.ext4: set {variable} to choose)"
    finally:
        if mounted:
            subprocess.run(["umount", str(work / "mnt")], check=False)
        if device:
            subprocess.run(["losetup", "-d", device], check=False)
        shutil.rmtree(work, ignore_errors=True)
