#!/usr/bin/env bash
# The Python environment the peer tests drive Osprey with: thumbor's own signer (PyPI libthumbor), an imgproxy URL
# builder (PyPI imgproxy), thumbor itself (PyPI thumbor, with Pillow), and the reference encoders the placeholders
# are compared with (PyPI blurhash, thumbhash-python, ImageHash, scikit-learn, pyciede2000) and the SSIMULACRA 2 port
# (PyPI ssimulacra2), in .build/test-venv.
# Made once, kept with the build; `make test` runs this first. Without python3 it says so and the peer tests skip
# (CI requires them).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.build/test-venv
packages=(
    libthumbor==2.0.2 imgproxy==1.0.0 thumbor==7.8.0
    blurhash==1.1.5 thumbhash-python==1.0.1 ImageHash==4.3.2 scikit-learn==1.9.1 pyciede2000==0.0.21
    ssimulacra2==0.3.0
)
if ! command -v python3 >/dev/null; then
    echo "test-venv: python3 is not installed: the peer tests (libthumbor, imgproxy, thumbor) will skip" >&2
    exit 0
fi
if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import libthumbor, imgproxy, thumbor, PIL, blurhash, thumbhash, imagehash, sklearn, pyciede2000, ssimulacra2" \
    2>/dev/null; then
    exit 0
fi
mkdir -p .build
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}"
echo "test-venv: ${packages[*]} in $venv"
