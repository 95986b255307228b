#!/usr/bin/env bash
# install.sh: `make install PREFIX=...` lays out the binary, man page, themes, models.conf, the
# bundled model and licences, and the installed binary finds its data relative to itself.
. "$(dirname "$0")/lib.sh"
SUITE=install
p=$TMP/prefix
if make -s --no-print-directory install PREFIX="$p" >"$TMP/log" 2>&1; then ok make-install; else fail make-install "$(tail -5 "$TMP/log")"; fi
for f in bin/unmask share/man/man1/unmask.1 share/unmask/models.conf share/doc/unmask/LICENSE share/doc/unmask/LICENSE.spleen; do
  [ -f "$p/$f" ] && ok "installed $f" || fail "installed $f" "missing $p/$f"
done
n=$(ls "$p/share/unmask/themes" 2>/dev/null | grep -c '\.theme$')
[ "$n" -eq "$(ls themes/*.theme 2>/dev/null | wc -l)" ] && ok "themes installed ($n)" || fail themes-installed "$n installed"
[ -x "$p/bin/unmask" ] && "$p/bin/unmask" --version >/dev/null && ok installed-binary-runs || fail installed-binary-runs
finish
