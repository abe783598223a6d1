#!/usr/bin/env bash
# `make install` into a staging directory, then checks what it put there: the binary runs (and finds osprey-proxy,
# which runs sign and serve), the manual page renders with every subcommand, and the bash completion completes a
# subcommand and a flag of it (zsh's and fish's are checked for syntax when those shells are installed), and the
# systemd unit docs/deploy/osprey.service passes `systemd-analyze verify` with its ExecStart on the staged binary.
# CONFIGURATION picks the build (default: debug, already built by `make test`). Exits non-zero when any of it does
# not hold.
set -euo pipefail
cd "$(dirname "$0")/.."

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
make --no-print-directory install CONFIGURATION="${CONFIGURATION:-debug}" DESTDIR="$stage" PREFIX=/usr >/dev/null
root="$stage/usr"

"$root/bin/osprey" --version | head -n 1
# serve and sign run through libexec/osprey/osprey-proxy, found from bin/osprey
signed=$("$root/bin/osprey" sign https://example.com/a.jpg w=300 --secret check-install-secret)
[[ "$signed" == "/img?url="*"&sig="* ]] || { echo "osprey sign printed '$signed'" >&2; exit 1; }
manual=$(MANWIDTH=100 man -l "$root/share/man/man1/osprey.1" 2>/dev/null || cat "$root/share/man/man1/osprey.1")
for command in fetch prefetch cache info convert serve sign; do
    grep -qw "$command" <<<"$manual" || { echo "the manual page does not describe '$command'" >&2; exit 1; }
done

complete() {  # the words typed so far: what the bash completion offers for the last one
    local line="$*"
    PATH="$root/bin:$PATH" bash -c '
        source "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        _osprey osprey "${@: -1}" "${@: -2:1}"
        echo "${COMPREPLY[*]}"' _ "$root/share/bash-completion/completions/osprey" $line
}
offered=$(complete osprey ser)
[[ "$offered" == "serve" ]] || { echo "bash: 'osprey ser' completes to '$offered', not 'serve'" >&2; exit 1; }
offered=$(complete osprey serve --allow-p)
[[ "$offered" == "--allow-private-networks" ]] || {
    echo "bash: 'osprey serve --allow-p' completes to '$offered'" >&2
    exit 1
}
if command -v zsh >/dev/null; then zsh -n "$root/share/zsh/site-functions/_osprey"; fi
if command -v fish >/dev/null; then fish -n "$root/share/fish/vendor_completions.d/osprey.fish"; fi
# The unit as shipped, but for where its binary is: verify checks that ExecStart's program exists.
if command -v systemd-analyze >/dev/null; then
    sed "s|/usr/local/bin/osprey|$root/bin/osprey|" docs/deploy/osprey.service >"$stage/osprey.service"
    # Its Documentation= (man:osprey(1)) is looked up by man: the staged manual page. verify exits 0 for an unknown key
    # or a value it cannot parse ("ignoring"), so anything it says fails the check.
    said=$(MANPATH="$root/share/man" systemd-analyze verify "$stage/osprey.service" 2>&1) || {
        echo "$said" >&2
        exit 1
    }
    [[ -z "$said" ]] || { echo "systemd-analyze verify docs/deploy/osprey.service: $said" >&2; exit 1; }
    echo "ok: systemd-analyze verify docs/deploy/osprey.service"
elif [[ -n "${OSPREY_REQUIRE_SYSTEMD_ANALYZE:-}" ]]; then
    echo "systemd-analyze is not installed: docs/deploy/osprey.service is not checked" >&2
    exit 1
fi
echo "ok: make install put osprey, osprey.1 (7 subcommands) and completions (bash completes 'ser' and '--allow-p')"
