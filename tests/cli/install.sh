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
# run from an empty directory with an empty HOME: the installed models.conf and bundled model
mkdir -p "$TMP/empty"
if [ -f models/unmask-demo.gguf ]; then
  (cd "$TMP/empty" && HOME="$TMP/empty" XDG_CONFIG_HOME= "$p/bin/unmask" generate -q --gen 4 -p hi --json) >"$TMP/o" 2>"$TMP/e"
  if [ $? = 0 ] && grep -q '"gen":4' "$TMP/o"; then ok "installed: runs from any directory on the bundled model"
  else fail "installed: runs from any directory" "$(head -c 300 "$TMP/e")"; fi
  (cd "$TMP/empty" && HOME="$TMP/empty" XDG_CONFIG_HOME= "$p/bin/unmask" --list-models) >"$TMP/o" 2>&1
  grep -q "presets in $p/bin/../share/unmask/models.conf" "$TMP/o" && grep -qE '^  demo +present ' "$TMP/o" \
    && ok "installed: --list-models finds the installed models.conf, demo present" || fail "installed: --list-models" "$(head -3 "$TMP/o")"
  # the bundled model gone (and no preset naming it): the message says where it looked
  mv "$p/share/unmask/models" "$p/share/unmask/models.away"; mv "$p/share/unmask/models.conf" "$p/share/unmask/models.conf.away"
  (cd "$TMP/empty" && HOME="$TMP/empty" XDG_CONFIG_HOME= "$p/bin/unmask" generate -q --gen 4 -p hi) >"$TMP/o" 2>"$TMP/e"; rc=$?
  if [ $rc = 1 ] && grep -qF "the bundled model unmask-demo.gguf is in none of models/, $p/bin/models/, $p/bin/../share/unmask/models/" "$TMP/e" \
     && ! grep -q "make demo-model" "$TMP/e"; then ok "installed, model missing: names where it looked"
  else fail "installed, model missing: names where it looked" "rc $rc: $(cat "$TMP/e")"; fi
  mv "$p/share/unmask/models.away" "$p/share/unmask/models"; mv "$p/share/unmask/models.conf.away" "$p/share/unmask/models.conf"
else skip "installed: the bundled model" "models/unmask-demo.gguf missing"; fi
finish
