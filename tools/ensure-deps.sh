#!/bin/sh
# ensure-deps.sh KIND: make sure the Debian packages unmask needs are installed.
#   KIND = build  (compiler, pkg-config, ncursesw, utf8proc)
#        | test   (build + what the tests drive: tmux, libvterm, giflib, gifsicle, fonts, word list)
#        | fuzz   (clang with libFuzzer)
#        | plot   (gnuplot, which draws the figures under docs/ from bench/results/)
# Installs with apt-get when running as root; otherwise prints the exact command and fails.
set -eu
kind=${1:-build}
pkgs="gcc make pkg-config libncurses-dev libutf8proc-dev"
[ "$kind" = test ] && pkgs="$pkgs tmux libgif-dev gifsicle fonts-spleen wamerican python3"
[ "$kind" = fuzz ] && pkgs="$pkgs clang libclang-rt-dev"
[ "$kind" = plot ] && pkgs="$pkgs gnuplot-nox"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing missing Debian packages:$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >&2
else
  echo "missing Debian packages:$missing; run: sudo apt-get update && sudo apt-get install -y$missing" >&2
  exit 1
fi
