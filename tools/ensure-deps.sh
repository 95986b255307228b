#!/bin/sh
# ensure-deps.sh KIND: make sure the Debian packages unmask needs are installed.
#   KIND = build  (compiler, pkg-config, ncursesw, utf8proc)
#        | test   (build + what the tests drive: tmux, libvterm, giflib, gifsicle, fonts, word list)
#        | fuzz   (clang with libFuzzer)
#        | plot   (gnuplot, which draws the figures under docs/ from bench/results/)
#        | arm64  (make test-arm64: the AArch64 cross compiler, user-mode QEMU and the arm64
#                  multiarch ncursesw/utf8proc; adds dpkg's arm64 architecture first)
# Installs with apt-get when running as root; otherwise prints the exact command and fails.
set -eu
kind=${1:-build}
pkgs="gcc make pkg-config libncurses-dev libutf8proc-dev"
[ "$kind" = test ] && pkgs="$pkgs tmux libgif-dev gifsicle fonts-spleen wamerican python3"
[ "$kind" = fuzz ] && pkgs="$pkgs clang libclang-rt-dev"
[ "$kind" = plot ] && pkgs="$pkgs gnuplot-nox"
[ "$kind" = arm64 ] && pkgs="gcc-aarch64-linux-gnu qemu-user pkg-config python3 libncurses-dev:arm64 libutf8proc-dev:arm64"
# macOS: Homebrew's packages, checked through pkg-config (ncurses is keg-only: the Makefile
# adds its pkg-config path); only the build needs them, the test tools are checked by the tests
if [ "$(uname -s)" = Darwin ]; then
  pcdir=$(brew --prefix ncurses 2>/dev/null)/lib/pkgconfig
  if ! command -v pkg-config >/dev/null 2>&1 ||
     ! PKG_CONFIG_PATH="$pcdir:${PKG_CONFIG_PATH:-}" pkg-config --exists ncursesw libutf8proc; then
    echo "missing Homebrew packages; run: brew install ncurses utf8proc pkg-config" >&2
    exit 1
  fi
  [ "$kind" = arm64 ] && { echo "make test-arm64 emulates AArch64 on an x86-64 Debian host; on a Mac run make test" >&2; exit 1; }
  exit 0
fi
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing missing Debian packages:$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  case $missing in *:arm64*) dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64 ;; esac
  apt-get update -qq >&2
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >&2
else
  add=""
  case $missing in *:arm64*) dpkg --print-foreign-architectures 2>/dev/null | grep -qx arm64 || add="sudo dpkg --add-architecture arm64 && " ;; esac
  echo "missing Debian packages:$missing; run: ${add}sudo apt-get update && sudo apt-get install -y$missing" >&2
  exit 1
fi
