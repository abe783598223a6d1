#!/usr/bin/env bash
# The system tools the tests start besides Osprey: tinyproxy, the forward proxy the egress-proxy tests go through
# (EgressProxyTests, UnprivilegedTests). Installed with apt-get when missing (through sudo when not root); Debian's
# package also starts tinyproxy as a service on port 8888, which the tests do not use, so it is stopped and disabled
# again. Without apt-get it says so and those tests skip (CI requires them: OSPREY_REQUIRE_TINYPROXY=1).
set -euo pipefail
if command -v tinyproxy >/dev/null || [[ -x /usr/bin/tinyproxy ]]; then
    exit 0
fi
if ! command -v apt-get >/dev/null; then
    echo "test-tools: no apt-get: install tinyproxy, or the egress-proxy tests skip" >&2
    exit 0
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null; then
        echo "test-tools: not root and no sudo: run 'apt-get install tinyproxy' as root, or those tests skip" >&2
        exit 0
    fi
    sudo=(sudo)
fi
echo "test-tools: installing tinyproxy"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tinyproxy >/dev/null
if command -v systemctl >/dev/null; then
    "${sudo[@]}" systemctl disable --now tinyproxy >/dev/null 2>&1 || true
fi
