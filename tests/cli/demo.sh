#!/usr/bin/env bash
# demo.sh: the bundled demo model is the default: `unmask generate` with no model flag uses it,
# it writes English (greedy decoding is deterministic, so this cannot flake: the share of
# dictionary words measured for docs/model.md is 98.8%; below 80% means the model or the
# engine broke), and the visualizer opens on it with no flags.
. "$(dirname "$0")/lib.sh"
SUITE=demo
expect_rc generate-without-model-flag 0 "$BIN" generate -q -p "Once upon a time there was a king who" --gen 64 --steps 32 --block 64 --temp 0
cp "$TMP/out" "$TMP/answer"
dict=/usr/share/dict/american-english
if [ -r $dict ]; then
  read -r total found < <(tools/dict-share.sh $dict <"$TMP/answer")
  if [ "$total" -ge 20 ] && [ $((found * 100)) -ge $((total * 80)) ]; then ok "english: $found of $total words in the dictionary"
  else fail english "$found of $total words in the dictionary: $(head -c 300 "$TMP/answer")"; fi
else
  skip english "no $dict (Debian package wamerican)"
fi
# the same with the preset named explicitly
expect_rc preset-demo 0 "$BIN" generate -q -M demo -p "The queen" --gen 16 --steps 8
# the visualizer opens on it with no flags
if command -v tmux >/dev/null; then
  sock=unmask-demo-$$
  tmux -L $sock new-session -d -x 100 -y 30 "$BIN --paused; sleep 5"
  for _ in 1 2 3 4 5 6 7 8 9 10; do sleep 0.5; tmux -L $sock capture-pane -p >"$TMP/screen" 2>/dev/null; grep -q unmask-demo "$TMP/screen" && break; done
  expect_grep visualizer-opens-on-demo-model 'unmask-demo' "$TMP/screen"
  tmux -L $sock send-keys q 2>/dev/null; sleep 0.5; tmux -L $sock kill-server 2>/dev/null
fi
finish
