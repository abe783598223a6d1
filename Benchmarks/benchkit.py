"""What the peer-comparison scripts share: running commands and building a release product of this package."""
import subprocess
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
