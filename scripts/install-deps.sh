#!/usr/bin/env bash
# Installs the system packages Osprey builds against (the codec -dev packages and pkg-config), only those missing.
# Debian/Ubuntu: apt-get, through sudo when not root. Elsewhere: prints exactly what to install, and fails when a
# required library cannot be found.
set -euo pipefail

debian_packages=(pkg-config libjpeg-dev libturbojpeg0-dev libpng-dev libwebp-dev libgif-dev libdeflate-dev libsqlite3-dev
    liblcms2-dev libavif-dev libheif-dev libjxl-dev libimagequant-dev)
brew_line="brew install pkg-config jpeg-turbo libpng webp giflib libdeflate sqlite little-cms2 libavif libheif jpeg-xl libimagequant"

if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    missing=()
    for package in "${debian_packages[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
        [[ "$status" == "install ok installed" ]] || missing+=("$package")
    done
    if ((${#missing[@]} == 0)); then
        exit 0
    fi
    echo "osprey: installing missing system packages: ${missing[*]}"
    sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || {
            echo "osprey: not root and no sudo: run 'apt-get install ${missing[*]}' as root" >&2
            exit 1
        }
        sudo=(sudo)
    fi
    export DEBIAN_FRONTEND=noninteractive
    # A fresh machine has no package lists; an old list may name versions the mirror no longer has.
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
    exit 0
fi

if [[ "$(uname -s)" == "Darwin" ]]; then
    if command -v pkg-config >/dev/null 2>&1 \
        && pkg-config --exists libturbojpeg libpng libwebp libwebpdemux libwebpmux libdeflate sqlite3 lcms2 libavif libheif libjxl imagequant 2>/dev/null; then
        exit 0
    fi
    echo "osprey: install the codec libraries with Homebrew:" >&2
    echo "    $brew_line" >&2
    exit 1
fi

if command -v pkg-config >/dev/null 2>&1 \
    && pkg-config --exists libturbojpeg libpng libwebp libwebpdemux libwebpmux libdeflate sqlite3 lcms2 libavif libheif libjxl imagequant 2>/dev/null; then
    exit 0
fi
echo "osprey: unsupported system: install pkg-config and the development files of libjpeg-turbo (with" >&2
echo "turbojpeg), libpng 1.6, libdeflate, libwebp (with demux and mux), giflib 5, SQLite 3, Little CMS 2, libavif, libheif and libjxl, e.g. on" >&2
echo "Debian/Ubuntu:" >&2
echo "    apt-get install ${debian_packages[*]}" >&2
exit 1
