#!/usr/bin/env bash
# compare.sh: side-by-side runs (issue 18, `--compare FLAGS`). The visualizer headless in a
# private tmux server, on the synthetic source (--demo-ui) and the bundled model: 2, 3 and 4
# panes with headers naming their settings, lock-step pause / n / [ (the same step in every
# pane), diff marks (different seeds: some; the same settings: none), a resize from wide
# (side by side) to narrow (stacked), a terminal too small for the panes, the per-pane
# summary against `unmask generate --json` of the same settings, and `unmask record
# --compare`. No timing thresholds: every wait is "until the screen says so" with a bound.
SUITE=compare
. "$(dirname "$0")/lib.sh"

ROOT=${UNMASK_ROOT:-$PWD}
MODEL=$ROOT/models/unmask-demo.gguf

# ---------------------------------------------------------------- flags
expect_rc "--compare -m with --demo-ui: exit 2" 2 "$BIN" --demo-ui --compare "-m x.gguf"
expect_grep "--compare -m with --demo-ui: says why" "--compare: -m and -M need a model run" "$TMP/err"
expect_rc "--compare -t: exit 2" 2 "$BIN" --demo-ui --compare "-t 1"
expect_grep "--compare -t: says why" "--compare: -t is not allowed there .every pane decodes the same prompt on the same machine" "$TMP/err"
expect_rc "--compare -p: exit 2" 2 "$BIN" --demo-ui --compare "--seed 3 -p hi"
expect_grep "--compare -p: says why" "--compare: -p is not allowed there" "$TMP/err"
expect_rc "--compare --gpu: exit 2" 2 "$BIN" --demo-ui --compare "--gpu"
expect_rc "--compare a non-flag: exit 2" 2 "$BIN" --demo-ui --compare "--frob 3"
expect_grep "--compare a non-flag: named" "'--frob' is not a decoding flag" "$TMP/err"
expect_rc "--compare a bad value: exit 2" 2 "$BIN" --demo-ui --compare "--steps x"
expect_grep "--compare a bad value: named" "steps: 'x' is not a whole number" "$TMP/err"
expect_rc "--compare an open quote: exit 2" 2 "$BIN" --demo-ui --compare "--seed '3"
expect_rc "--compare empty: exit 2" 2 "$BIN" --demo-ui --compare "  "
expect_rc "--compare 4 times: exit 2" 2 "$BIN" --demo-ui --compare "--seed 1" --compare "--seed 2" --compare "--seed 3" --compare "--seed 4"
expect_grep "--compare 4 times: says the limit" "at most 3" "$TMP/err"
expect_rc "--compare with no value: exit 2" 2 "$BIN" --demo-ui --compare
"$BIN" --ui-help >"$TMP/help"
expect_grep "--ui-help lists --compare" '^  --compare FLAGS ' "$TMP/help"
expect_grep "--ui-help lists the Tab key (the key table)" '^  Tab +--compare: move the focus' "$TMP/help"
"$BIN" record --help >"$TMP/help"
expect_grep "record --help lists --compare" '^  --compare FLAGS ' "$TMP/help"

. "$(dirname "$0")/tmuxlib.sh"
tmux_begin cmp compare
start() {  # start W H ARGS... (ARGS are shell words: quote --compare values with '...')
  local w=$1 h=$2; shift 2
  T kill-session -t ui 2>/dev/null
  rm -f "$TMP/rc"
  T new-session -d -s ui -x "$w" -y "$h" "$RUN $BIN $*; echo \$? >$TMP/rc"
}
cape() { T capture-pane -p -e -t ui; }
screen_has() { cap | grep -qF -- "$1"; }
screen_lacks() { ! cap | grep -qF -- "$1"; }
# pane_steps: the step of every pane header on screen, one per line ("1 3" = pane 1 at step 3)
pane_steps() { cap | grep -oE '[▸ ][1-4] [^·│]* · step [0-9]+/' | sed -E 's/^.([1-4]) .* step ([0-9]+)\//\1 \2/'; }
# all_at N K: K pane headers, all at step N
all_at() { [ "$(pane_steps | awk -v n="$1" '$2 == n' | wc -l)" = "$2" ] && [ "$(pane_steps | wc -l)" = "$2" ]; }
quit() { T send-keys -t ui q; wait_for test -s "$TMP/rc"; }
DEMO="--demo-ui --delay-ms 0"

# ---------------------------------------------------------------- 2, 3 and 4 panes
for n in 2 3 4; do
  args="" labels=""
  for k in $(seq 2 "$n"); do args="$args --compare '--seed $((k * 11))'"; done
  start 240 44 "$DEMO --paused $args"      # 4 panes of 50 columns: the headers in words
  if wait_for all_at 0 "$n"; then ok "$n panes: $n headers at step 0"; else fail "$n panes" "$(cap | head -5)"; fi
  miss=""
  screen_has "1 main" || miss="$miss main"
  for k in $(seq 2 "$n"); do screen_has "$k --seed $((k * 11)) · step" || miss="$miss $k"; done
  if [ -z "$miss" ]; then ok "$n panes: each header names its settings"; else fail "$n panes: labels" "missing:$miss; $(cap | sed -n 2p)"; fi
  quit
  if [ "$(cat "$TMP/rc" 2>/dev/null)" = 0 ]; then ok "$n panes: q exits 0"; else fail "$n panes: exit" "rc $(cat "$TMP/rc" 2>/dev/null)"; fi
done

# narrower panes: the header leaves out whole fields (forward passes, then masks), never cuts one
start 170 44 "$DEMO --paused --compare '--seed 22' --compare '--seed 33' --compare '--seed 44'"
if wait_for screen_has "2 --seed 22 · step 0/32 " && screen_lacks "2 --seed 22 · step 0/32 · m"; then ok "4 panes at 170 columns: whole header fields"
else fail "short headers" "$(cap | sed -n 2p)"; fi
quit

# ---------------------------------------------------------------- lock step
start 200 44 "$DEMO --paused --compare '--seed 3' --compare '--steps 8'"
wait_for all_at 0 3
for i in 1 2 3; do T send-keys -t ui n; wait_for all_at "$i" 3; done
if all_at 3 3; then ok "lock step: n three times: every pane at step 3"; else fail "lock step n" "$(pane_steps | tr '\n' ,)"; fi
T send-keys -t ui '['
if wait_for all_at 2 3; then ok "lock step: [ scrubs every pane back to step 2"; else fail "lock step [" "$(pane_steps | tr '\n' ,)"; fi
if cap | tail -1 | grep -q '^ step 2/'; then ok "lock step: the status line shows step 2 too"; else fail "lock step status" "$(cap | tail -1)"; fi
T send-keys -t ui Home
if wait_for all_at 0 3; then ok "lock step: Home: every pane at step 0"; else fail "lock step Home" "$(pane_steps | tr '\n' ,)"; fi
T send-keys -t ui Tab
if wait_for screen_has "▸2 --seed 3"; then ok "Tab moves the focus to pane 2"; else fail "Tab" "$(cap | grep -E '[▸] ?[1-4]' | head -2)"; fi
# pane 3 (8 steps) ends first: at the end every pane shows its last step, pane 3 its 8th
T send-keys -t ui ' '
if wait_for screen_has "3 --steps 8 · step 8/8" && wait_for bash -c "tmux -u -L $SOCK capture-pane -p -t ui | grep -q '1 main · step 32/32'"; then
  ok "lock step: the 8-step pane stops at 8 while the others run to 32"; else fail "lock step end" "$(pane_steps | tr '\n' ,)"; fi
quit

# ---------------------------------------------------------------- diff marks
# different seeds: positions differ (counted in the header, underlined); the same settings: none
start 200 44 "$DEMO --pace 0 --seed 5 --compare '--seed 9'"
wait_for screen_has "2 --seed 9 · step 32/32"
wait_for screen_has " differ"
nd=$(cap | grep -oE '[0-9]+ differ' | head -1 | cut -d' ' -f1)
if [ -n "$nd" ] && [ "$nd" -gt 0 ]; then ok "diff marks: seeds 5 and 9 differ at $nd positions"; else fail "diff count" "'$nd' $(cap | sed -n 2,3p)"; fi
# the theme's diff role (viridis: background #5f00af, 256-colour 55 under tmux-256color)
if cape | grep -q '48;5;55m'; then ok "diff marks: marked on screen"; else fail "diff mark" "no diff background"; fi
quit
start 200 44 "$DEMO --pace 0 --seed 5 --compare '--seed 5'"
wait_for screen_has "2 --seed 5 · step 32/32"
wait_for screen_has " differ"
if screen_has "done 32 steps · 32 fwd" && screen_has "0 differ"; then ok "diff marks: the same settings: 0 differ"; else fail "no diff" "$(cap | sed -n 2,3p)"; fi
if [ "$(cape | grep -c '48;5;55m')" = 1 ]; then ok "diff marks: the same settings: nothing marked (only the legend)"; else fail "no mark" "diff background $(cape | grep -c '48;5;55m') times"; fi
quit

start 200 44 "$DEMO --pace 0 --compare '--gen 40'"
if wait_for screen_has "other length: no marks"; then ok "diff marks: another --gen: says there are none"; else fail "other length" "$(cap | sed -n 2,3p)"; fi
quit

# ---------------------------------------------------------------- resize, too small
# four panes on one row (side by side) when wide; on four rows (stacked) when narrow
row_of() { cap | grep -nF -- "$1" | head -1 | cut -d: -f1; }
side_by_side() { local a b; a=$(row_of "1 main ·"); b=$(row_of "4 --seed 4 ·"); [ -n "$a" ] && [ "$a" = "$b" ]; }
stacked() { local a b; a=$(row_of "1 main ·"); b=$(row_of "4 --seed 4 ·"); [ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ]; }
start 240 50 "$DEMO --paused --compare '--seed 2' --compare '--seed 3' --compare '--seed 4'"
if wait_for side_by_side; then ok "4 panes at 240 columns: side by side"; else fail "side by side" "$(cap | sed -n 2p)"; fi
T resize-window -t ui -x 90 -y 50
if wait_for stacked; then ok "resize to 90 columns: stacked"; else fail "stacked" "$(cap | head -3)"; fi
T resize-window -t ui -x 70 -y 20
if wait_for screen_has "terminal too small for 4 panes"; then ok "70x20 with 4 panes: too small, says so"; else fail "too small" "$(cap | head -5)"; fi
T resize-window -t ui -x 240 -y 50
if wait_for side_by_side; then ok "back to 240 columns: side by side again"; else fail "back wide" "$(cap | sed -n 2p)"; fi
quit
if [ "$(cat "$TMP/rc" 2>/dev/null)" = 0 ]; then ok "resizes: no crash, q exits 0"; else fail "resize exit" "rc $(cat "$TMP/rc" 2>/dev/null)"; fi
start 60 16 "$DEMO --compare '--seed 2' --compare '--seed 3' --compare '--seed 4'"
if wait_for screen_has "terminal too small for 4 panes"; then ok "starting at 60x16 with 4 panes: too small, says so"; else fail "start too small" "$(cap)"; fi
quit

# ---------------------------------------------------------------- the bundled model: summary values
if [ ! -f "$MODEL" ]; then skip compare "the bundled model $MODEL is missing"; finish; exit 0; fi
P="Once upon a time"
GEN="-m $MODEL --no-chat --gen 16 --steps 8"
start 90 44 "$GEN -p '$P' --pace 0 --compare '--cfg 1' --compare '--threshold 0.5'"   # stacked: one header a row
wait_for screen_has "3 --threshold 0.5 · step" && wait_for bash -c "[ \$(tmux -u -L $SOCK capture-pane -p -t ui | grep -c '  done ') = 3 ]"
summ() { cap | grep -A1 -F -- "$1 · step" | sed -n 2p | sed -nE 's/^ *done ([0-9]+) steps · ([0-9]+) fwd · ([0-9.]+) tok\/fwd · order ([0-9.]+).*/\1 \2 \3 \4/p'; }
for spec in "1 main|" "2 --cfg 1|--cfg 1" "3 --threshold 0.5|--threshold 0.5"; do
  label=${spec%%|*} flags=${spec#*|}
  got=$(summ "$label")
  # shellcheck disable=SC2086
  want=$("$BIN" generate $GEN -p "$P" $flags --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["steps_run"], d["forward_passes"], "%.2f" % (16 / d["forward_passes"]))')
  if [ -n "$got" ] && [ "${got% *}" = "$want" ]; then ok "summary of '$label': steps, forward passes, tok/fwd as generate --json ($want)"
  else fail "summary '$label'" "screen '$got', generate '$want'"; fi
done
quit

# ---------------------------------------------------------------- record --compare
# cast_text CAST: the cast's output, replayed by a tiny terminal (cursor moves become line
# breaks, colours dropped), its last 20,000 characters
cast_text() {
  python3 - "$1" <<'EOF'
import json, re, sys
lines = open(sys.argv[1]).read().splitlines()
out = ''.join(e[2] for e in map(json.loads, lines[1:]) if e[1] == 'o')
print(re.sub(r'\x1b\[[0-9;?]*[A-Za-z]', '\n', out)[-20000:])
EOF
}
"$BIN" record $GEN -p "$P" -q --compare "--seed 9" --compare "--schedule timestep" --cast "$TMP/c.cast" 2>"$TMP/err"
rc=$?
if [ $rc = 0 ] && [ -s "$TMP/c.cast" ]; then ok "record --compare --cast: exit 0"; else fail "record --compare" "rc $rc $(cat "$TMP/err")"; fi
cast_text "$TMP/c.cast" >"$TMP/screen"
if grep -qF "1 main" "$TMP/screen" && grep -qF "2 --seed 9" "$TMP/screen" && grep -qF "3 --schedule timestep" "$TMP/screen"; then
  ok "record --compare: the cast shows the three panes' headers"; else fail "record cast panes" "$(grep -c . "$TMP/screen") lines"; fi
if grep -qE "done 8 steps" "$TMP/screen"; then ok "record --compare: the cast ends with the summaries"; else fail "record summary" "none"; fi
# a recording is playback: the panes' lock step never reads as a rewind
if ! grep -q "REWIND" "$TMP/c.cast"; then ok "record --compare: no REWIND badge in any frame"; else fail "record --compare REWIND" "$(grep -o 'REWIND[^"]*' "$TMP/c.cast" | head -2)"; fi

# ---------------------------------------------------------------- a pane with its own model
# -m/-M in --compare: that pane loads its own engine and takes only its own flags (its preset's
# settings, not main's). The same file and settings as main: the same text, 0 differ (the two
# engines' tokens compared by text); the sudoku model: its own summary, as generate gives it.
SUDOKU=$ROOT/models/unmask-sudoku.gguf
OWN="--no-chat --gen 16 --steps 8"
"$BIN" record $GEN -p "$P" -q --size 240x40 --compare "-m $MODEL $OWN" --compare "-m $SUDOKU $OWN" --cast "$TMP/o.cast" 2>"$TMP/err"
rc=$?
if [ $rc = 0 ] && [ -s "$TMP/o.cast" ]; then ok "record --compare -m: two more models, exit 0"; else fail "record --compare -m" "rc $rc $(cat "$TMP/err")"; fi
cast_text "$TMP/o.cast" >"$TMP/oscreen"
if grep -qF "2 -m " "$TMP/oscreen" && grep -qF "3 -m " "$TMP/oscreen"; then ok "record --compare -m: panes 2 and 3 name their model flags"
else fail "own model header" "$(grep -F ' -m ' "$TMP/oscreen" | head -2)"; fi
if grep -qF "done 8 steps" "$TMP/oscreen"; then ok "record --compare -m: the cast ends with the summaries"; else fail "own model record summary" "none"; fi
want=$("$BIN" generate -m "$SUDOKU" -p "$P" $OWN --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print("done %d steps · %d fwd" % (d["steps_run"], d["forward_passes"]))')
expect_rc "record --compare -M with a preset that does not exist: exit 1" 1 "$BIN" record $GEN -p "$P" --compare "-M nosuch" --cast "$TMP/x.cast"
expect_grep "record --compare -M nosuch: names the pane and the preset" "^unmask record: --compare '-M nosuch': -M nosuch" "$TMP/err"
expect_rc "record --compare -m a missing file: exit 1" 1 "$BIN" record $GEN -p "$P" --compare "-m $TMP/none.gguf" --cast "$TMP/x.cast"
expect_grep "record --compare -m a missing file: says which" "none.gguf" "$TMP/err"
if [ ! -e "$TMP/x.cast" ]; then ok "record --compare with a bad model: no cast written"; else fail "bad model cast" "written"; fi
start 240 44 "$GEN -p '$P' --pace 0 --compare '-m $MODEL $OWN' --compare '-m $SUDOKU $OWN'"
if wait_for screen_has "3 -m " && wait_for bash -c "[ \$(tmux -u -L $SOCK capture-pane -p -t ui | grep -o ' done [0-9]' | wc -l) = 3 ]"; then
  ok "visualizer --compare -m: three panes on two models run to their summaries"; else fail "visualizer own model" "$(cap | head -4)"; fi
sumline=$(cap | grep -F ' done ' | head -1)
p2=$(sed -E 's/^[^│]*│[^│]*· ([0-9]+) differ.*/\1/;t;s/.*/-/' <<<"$sumline")
p3=$(sed -E 's/^[^│]*│[^│]*│.*· ([0-9]+) differ.*/\1/;t;s/.*/-/' <<<"$sumline")
if [ "$p2" = 0 ]; then ok "visualizer --compare -m: the same model and settings on another engine: 0 differ (compared by text)"
else fail "own model, same settings" "pane 2: '$p2' in: $sumline"; fi
if [ "$p3" != - ] && [ "$p3" -gt 0 ]; then ok "visualizer --compare -m: the sudoku model's text differs from the demo model's at $p3 positions"
else fail "other model differs" "pane 3: '$p3' in: $sumline"; fi
if [ -n "$want" ] && screen_has "$want"; then ok "visualizer --compare -m: the sudoku pane's summary is generate's ($want)"; else fail "visualizer own summary" "want '$want': $(cap | grep done)"; fi
T send-keys -t ui Tab Tab
if wait_for bash -c "tmux -u -L $SOCK capture-pane -p -t ui | head -1 | grep -q unmask-sudoku"; then ok "visualizer --compare -m: focusing pane 3 shows its model in the header"
else fail "focus own model header" "$(cap | head -1)"; fi
quit
if ls "$TMP"/tsan* >/dev/null 2>&1; then fail "ThreadSanitizer reports" "$(head -30 "$TMP"/tsan* )"; fi
finish
