#!/usr/bin/env bash
# tui.sh: the visualizer, headless. Runs the real binary with the synthetic source
# (--demo-ui, documented in docs/ui.md) inside a private tmux server at fixed sizes, sends
# keys and reads the screen back with capture-pane (-e for colours).
SUITE=tui
. "$(dirname "$0")/lib.sh"

# ThreadSanitizer builds write their reports to $TMP/tsan.PID (RUN, tmuxlib.sh; checked at the end)
. "$(dirname "$0")/tmuxlib.sh"
tmux_begin test tui

start() {  # start W H ARGS... : fresh session running unmask ARGS, wrapped to record tty state and rc
  local w=$1 h=$2; shift 2
  T kill-session -t ui 2>/dev/null
  rm -f "$TMP/rc" "$TMP/stty.before" "$TMP/stty.after"
  T new-session -d -s ui -x "$w" -y "$h" \
    "stty -g >$TMP/stty.before; $RUN $BIN $*; echo \$? >$TMP/rc; stty -g >$TMP/stty.after"
}
cape() { T capture-pane -p -e -t ui; }
status_line() { cap | sed -n '$p'; }
step_now() { status_line | sed -n 's/^ *step \([0-9]*\)[/ ].*/\1/p'; }
# wait_for NAME CMD... : retry CMD (a test) for up to 5 s (x SLOW)
screen_has() { cap | grep -qF -- "$1"; }
screen_lacks() { ! cap | grep -qF -- "$1"; }
step_is() { [ "$(step_now)" = "$1" ]; }
settled() { status_line | grep -q 'PAUSED *$' && ! status_line | grep -q finishing; }
pane() { T list-panes -t ui -F "$1"; }
# sgr_colours: which kinds of colour the SGR sequences on stdin use: ansi8 (30-37/40-47),
# bright (90-97/100-107), 256 (38;5/48;5), rgb (38;2/48;2); default colours (39/49) ignored
sgr_colours() { python3 -c '
import re, sys
kinds = set()
for m in re.finditer(r"\x1b\[([0-9;]*)m", sys.stdin.read()):
    ps = [int(p) if p else 0 for p in m.group(1).split(";")]
    i = 0
    while i < len(ps):
        p = ps[i]
        if p in (38, 48):
            kinds.add("256" if ps[i + 1] == 5 else "rgb"); i += 3 if ps[i + 1] == 5 else 5; continue
        if 30 <= p <= 37 or 40 <= p <= 47: kinds.add("ansi8")
        if 90 <= p <= 97 or 100 <= p <= 107: kinds.add("bright")
        i += 1
print(" ".join(sorted(kinds)))'; }
# canvas text of the wide layout: rows 2..h-2 left of the panel border
canvas_wide() { cap | sed -n '2,28p' | sed 's/│.*//'; }

# ---------------------------------------------------------------- not a terminal
expect_rc "not a tty: exit 1" 1 "$BIN" --demo-ui
expect_grep "not a tty: points to generate" 'unmask generate' "$TMP/err"
# no -m/-M: the bundled demo model, if any; in an empty directory (and no install) there is none
(cd "$TMP" && "$BIN" --paused >"$TMP/out" 2>"$TMP/err"); rc=$?
if { [ $rc != 0 ] && grep -q -- '-m FILE' "$TMP/err"; } || { [ $rc = 1 ] && grep -q 'unmask generate' "$TMP/err"; }; then
  ok "no model given: says what to pass (or finds the installed demo model)"; else fail "no model given" "rc $rc: $(cat "$TMP/err")"; fi
expect_rc "bad generation flag: exit 2" 2 "$BIN" --demo-ui --steps x
expect_grep "bad generation flag: named" "steps: 'x' is not a whole number" "$TMP/err"
expect_rc "unknown flag: exit 2" 2 "$BIN" --demo-ui --frobnicate

# ---------------------------------------------------------------- the key table agrees everywhere
# --ui-help prints ui/keys.c's table (the ? overlay draws the same one): each key it lists has
# a row in README.md's key table and an entry in the man page's Keys section
"$BIN" --ui-help >"$TMP/uihelp" 2>&1
readme_keys=$(awk '/^\| key \| action \|/{f=1;next} f&&/^$/{f=0} f' "$(dirname "$0")/../../README.md")
man_keys=$(sed -n '/^\.SS Keys/,/^\.SH/p' "$(dirname "$0")/../../docs/unmask.1" | sed 's/\\-/-/g')
missing=""
for k in $(sed -n '/^keys (the same table/,$p' "$TMP/uihelp" | tail -n +2 | awk '{print $1}'); do
  grep -qE "(^\| |\`|, |/ )$(printf '%s' "$k" | sed 's/[][?+.]/\\&/g')( |\`|,|/)" <<<"$readme_keys" || missing="$missing readme:$k"
  grep -E '^\.(B|BR|RB) ' <<<"$man_keys" | grep -qE "(^\.[BR]+ |[ \"])$(printf '%s' "$k" | sed 's/[][?+.]/\\&/g')([ \",]|$)" || missing="$missing man:$k"
done
if [ -z "$missing" ]; then ok "every key of --ui-help is in README's key table and the man page"; else fail "key tables disagree" "$missing"; fi

# ---------------------------------------------------------------- models.conf and themes from the command line
expect_rc "--list-models: the shipped models.conf parses" 0 "$BIN" --list-models
expect_grep "--list-models: lists llada-8b" '^  llada-8b +(present|MISSING) ' "$TMP/out"
mkdir -p "$TMP/mc" && : >"$TMP/mc/here.gguf"
printf '[ok]\npath = here.gguf\nsteps = 8\n[gone]\npath = missing.gguf\n' >"$TMP/mc/models.conf"
(cd "$TMP/mc" && "$BIN" --list-models >"$TMP/out" 2>&1)
if grep -qE '^  ok +present ' "$TMP/out" && grep -qE '^  gone +MISSING ' "$TMP/out"; then ok "--list-models: says which files exist"; else fail "--list-models present/missing" "$(cat "$TMP/out")"; fi
(cd "$TMP/mc" && "$BIN" -M nope >"$TMP/out" 2>&1); rc=$?
if [ $rc = 1 ] && grep -q 'no preset \[nope\]' "$TMP/out"; then ok "-M unknown preset: clear error"; else fail "-M unknown" "rc $rc: $(cat "$TMP/out")"; fi
printf '[bad]\npath = x\nstep = 8\n' >"$TMP/mc/models.conf"
(cd "$TMP/mc" && "$BIN" -M bad >"$TMP/out" 2>&1); rc=$?
if [ $rc = 1 ] && grep -q 'models.conf:3: unknown key' "$TMP/out"; then ok "-M with a broken models.conf: FILE:LINE"; else fail "-M broken conf" "rc $rc: $(cat "$TMP/out")"; fi
printf 'name = b\nmask = #123\n' >"$TMP/bad.theme"
expect_rc "--theme with a bad file: exit 1" 1 "$BIN" --demo-ui --theme "$TMP/bad.theme"
expect_grep "--theme error names FILE:LINE" 'bad.theme:2: bad colour' "$TMP/err"

# ---------------------------------------------------------------- start, masks, steps advance
# 300 ms a step (32 steps, about 10 s): the checks below must see masks left and the counter
# moving even when a loaded machine makes every poll slow (waiting for exactly step 1 could
# miss it and time out after the run had finished)
start 100 30 --demo-ui --delay-ms 300 --seed 7 -p "'漢字😀x café'"
step_from() { local k; k=$(step_now); [ -n "$k" ] && [ "$k" -ge "$1" ]; }
if wait_for step_from 1; then ok "starts and draws a status line"; else fail "starts" "$(cap)"; fi
if cap | sed -n '2,20p' | grep -q '░'; then ok "mask glyphs on the canvas"; else fail "mask glyphs" "$(cap)"; fi
s1=$(step_now); sleep 1; s2=$(step_now)
if [ -n "$s1" ] && [ -n "$s2" ] && [ "$s2" -gt "$s1" ]; then ok "step counter advances ($s1 -> $s2)"; else fail "step counter advances" "$s1 -> $s2"; fi

# ---------------------------------------------------------------- CJK and emoji cells
# The prompt row must read 漢字😀x exactly (a misplaced cell would clobber half a wide
# glyph) and the panel border must sit in column 65 on every canvas row, whatever it holds.
row=$(cap | sed -n 2p)
case "$row" in "漢字😀x café"*) ok "CJK and emoji prompt drawn intact";; *) fail "CJK/emoji prompt" "$row";; esac
cols=$(cap | sed -n '2,28p' | python3 -c '
import sys, unicodedata
def w(ch):
    if unicodedata.combining(ch): return 0
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1
out = set()
for line in sys.stdin:
    line = line.rstrip("\n")
    if "│" in line: out.add(sum(w(c) for c in line[:line.index("│")]))
print(" ".join(str(c) for c in sorted(out)))')
if [ "$cols" = 65 ]; then ok "wide cells: panel border in column 65 on every row"; else fail "wide cells" "border columns: $cols"; fi
if cap | sed -n 2p | python3 -c 'import sys; l=sys.stdin.read(); i=l.index("x"); import unicodedata as u; print(sum(2 if u.east_asian_width(c) in "WF" else 1 for c in l[:i]))' | grep -qx 6; then
  ok "x after 漢字😀 lands in column 6"; else fail "x after 漢字😀 column" "$(cap | sed -n 2p)"; fi

# ---------------------------------------------------------------- pause, one step
T send-keys -t ui Space
if wait_for settled; then ok "space pauses"; else fail "space pauses" "$(status_line)"; fi
p1=$(step_now); sleep 1; p2=$(step_now)
if [ "$p1" = "$p2" ] && [ -n "$p1" ]; then ok "paused: counter stays at $p1"; else fail "paused counter" "$p1 -> $p2"; fi
before=$(canvas_wide)
T send-keys -t ui n
if wait_for step_is $((p2 + 1)) && wait_for settled; then
  sleep 0.5
  if step_is $((p2 + 1)); then ok "n advances exactly one step"; else fail "n advances one" "$(step_now)"; fi
else fail "n advances one step" "$p2 -> $(step_now)"; fi

# ---------------------------------------------------------------- rewind
T send-keys -t ui '['
if wait_for screen_has "REWIND $p2/"; then ok "[ rewinds (REWIND $p2)"; else fail "[ rewinds" "$(status_line)"; fi
if [ "$(canvas_wide)" = "$before" ]; then ok "rewind shows the earlier canvas"; else fail "rewind canvas" "$(diff <(echo "$before") <(canvas_wide) | head -5)"; fi
T send-keys -t ui ']'
if wait_for step_is $((p2 + 1)) && screen_lacks REWIND; then ok "] returns to the newest step"; else fail "] forward" "$(status_line)"; fi

# ---------------------------------------------------------------- help
before_help=$(cap | sed '$d')                   # all but the status line (its message may expire)
T send-keys -t ui '?'
if wait_for screen_has "? or Esc closes)"; then ok "? shows the help"; else fail "? help" "$(cap | head -5)"; fi
if screen_has "cycle colour theme" && screen_has "scrub back"; then ok "help lists the bindings"; else fail "help lists" ""; fi
T send-keys -t ui '?'
if wait_for screen_lacks "? or Esc closes)"; then ok "? hides the help"; else fail "? hides help" ""; fi
# ?? leaves the screen as it was (the frame is reused: nothing of the help may stay behind)
if [ "$(cap | sed '$d')" = "$before_help" ]; then ok "?? leaves the screen as it was"
else fail "?? leftovers" "$(diff <(echo "$before_help") <(cap | sed '$d') | head -6)"; fi
# i and p hide the side panels, the canvas takes their room; again shows them
T send-keys -t ui i
if wait_for screen_lacks "inspector  pos" && screen_has "schedule  "; then ok "i hides the inspector"; else fail "i" "$(cap | sed -n 2p)"; fi
T send-keys -t ui p
if wait_for screen_lacks "schedule  " && [ -z "$(cap | sed -n '2,27p' | grep -F '│')" ]; then ok "i p: the canvas takes the whole width"
else fail "i p" "$(cap | sed -n 2p)"; fi
T send-keys -t ui i
T send-keys -t ui p
both_panels() { screen_has "inspector  pos" && screen_has "schedule  "; }   # the two keys may land a redraw apart
if wait_for both_panels; then ok "i p again: both panels back"; else fail "i p back" "$(cap | sed -n 2p)"; fi

# ---------------------------------------------------------------- theme changes a known cell
header_bg() { cape | sed -n 1p | grep -o '\[[0-9;]*48;5;[0-9]*m' | head -1 | grep -o '48;5;[0-9]*'; }
bg1=$(header_bg)
T send-keys -t ui c
wait_for screen_has "theme: magma"
bg2=$(header_bg)
if [ -n "$bg1" ] && [ -n "$bg2" ] && [ "$bg1" != "$bg2" ]; then ok "c changes the header colour ($bg1 -> $bg2)"; else fail "theme colour" "'$bg1' -> '$bg2'"; fi

# ---------------------------------------------------------------- heat mode: ghost text
T send-keys -t ui h
if wait_for screen_has "heat: live confidence"; then ok "h cycles the heat mode"; else fail "h heat" "$(cap | tail -2)"; fi
if ! canvas_wide | grep -q '░'; then ok "live confidence: masks show ghost text"; else fail "ghost text" "$(canvas_wide | head -8)"; fi
T send-keys -t ui h h h
wait_for screen_has "heat: confidence at commit"

# ---------------------------------------------------------------- resize reflows
flat() { tr -d ' \n'; }
wide_text=$(canvas_wide | flat)
T resize-window -t ui -x 80 -y 30
narrow_canvas() { cap | sed -n '2,$p' | sed '/^──/,$d'; }
if wait_for bash -c "! tmux -u -L $SOCK capture-pane -p -t ui | grep -q '│.*inspector'"; then ok "resize to 80: panels move under the canvas"; else fail "resize layout" "$(cap | head -4)"; fi
narrow_text=$(narrow_canvas | flat)
if [ -n "$wide_text" ] && [ "$wide_text" = "$narrow_text" ]; then ok "resize reflows the same text"; else fail "resize reflow" "wide: ${wide_text:0:80} narrow: ${narrow_text:0:80}"; fi
maxw=$(narrow_canvas | python3 -c '
import sys, unicodedata as u
print(max(sum(2 if u.east_asian_width(c) in "WF" else 1 for c in l.rstrip()) for l in sys.stdin))')
if [ "$maxw" -gt 65 ] && [ "$maxw" -le 80 ]; then ok "resize: lines now up to $maxw cells (was 65)"; else fail "resize line width" "$maxw: $(narrow_canvas | head -8)"; fi

# ---------------------------------------------------------------- too small
T resize-window -t ui -x 50 -y 12
if wait_for screen_has "terminal too small"; then ok "too small: message instead of a layout"; else fail "too small" "$(cap)"; fi
T resize-window -t ui -x 100 -y 30
if wait_for screen_has "step $((p2 + 1))/"; then ok "back to normal size: layout returns"; else fail "resize back" "$(cap | tail -2)"; fi

# ---------------------------------------------------------------- q restores the terminal
T send-keys -t ui q
if wait_for test -s "$TMP/stty.after"; then ok "q quits"; else fail "q quits" "$(cap | tail -3)"; fi
if [ "$(cat "$TMP/rc" 2>/dev/null)" = 0 ]; then ok "q: exit status 0"; else fail "q exit status" "$(cat "$TMP/rc" 2>/dev/null)"; fi
if cmp -s "$TMP/stty.before" "$TMP/stty.after"; then ok "q: terminal modes restored"; else fail "q: terminal modes" "$(cat "$TMP/stty.before") vs $(cat "$TMP/stty.after")"; fi
if [ "$(pane '#{alternate_on}')" = 0 ]; then ok "q: alternate screen left"; else fail "q: alternate screen" ""; fi

# ---------------------------------------------------------------- SIGTERM restores the terminal
start 100 30 --demo-ui --delay-ms 150
wait_for screen_has "step "
pid=$(pgrep -P "$(pane '#{pane_pid}')" | head -1)
[ -n "$pid" ] && kill -TERM "$pid"
if wait_for test -s "$TMP/stty.after"; then ok "SIGTERM ends the visualizer"; else fail "SIGTERM" "pid '$pid'"; fi
if [ "$(cat "$TMP/rc" 2>/dev/null)" = 143 ]; then ok "SIGTERM: exit status 143"; else fail "SIGTERM exit status" "$(cat "$TMP/rc" 2>/dev/null)"; fi
if cmp -s "$TMP/stty.before" "$TMP/stty.after" && [ "$(pane '#{alternate_on}')" = 0 ]; then ok "SIGTERM: terminal restored"; else fail "SIGTERM: terminal restored" ""; fi

# ---------------------------------------------------------------- e edits the prompt and restarts
start 100 30 --demo-ui --delay-ms 100 --paused -p old
wait_for screen_has "PAUSED"
T send-keys -t ui e C-u
T send-keys -t ui -l 'new 漢字'
if wait_for screen_has "prompt> new 漢字"; then ok "e: the status line edits the prompt"; else fail "e edit line" "$(status_line)"; fi
T send-keys -t ui Enter
if wait_for bash -c "tmux -u -L $SOCK capture-pane -p -t ui | sed -n 2p | grep -q '^new 漢字'"; then ok "Enter: restarted with the new prompt"; else fail "edit restart" "$(cap | sed -n 2p)"; fi
T send-keys -t ui s
status_has() { status_line | grep -qF -- "$1"; }
if wait_for status_has "schedule timestep: from the next step"; then ok "s: the status line says the change applies from the next step"; else fail "s message" "$(cap | tail -2)"; fi
T send-keys -t ui +
if wait_for status_has "steps 64: from the next step"; then ok "+: steps change applies from the next step"; else fail "+ message" "$(cap | tail -2)"; fi
T send-keys -t ui R
if wait_for status_has "restarted, seed" && wait_for step_is 0; then ok "R: the status line says restarted (new seed, step 0)"; else fail "R message" "$(cap | tail -2)"; fi

# ---------------------------------------------------------------- mouse click and arrows move the inspector
T send-keys -t ui Escape
wait_for screen_has "(follows)"
T send-keys -t ui -l $'\e[M +$'              # xterm X10 mouse: press at column 10, row 3 (0-based)
T send-keys -t ui -l $'\e[M#+$'              # release
inspector_pos() { cap | sed -n 2p | sed -n 's/.*inspector  pos \([0-9]*\).*/\1/p'; }
if wait_for screen_lacks "(follows)"; then ok "click: the inspector takes the clicked token"; else fail "mouse click" "$(cap | sed -n 2p)"; fi
p_click=$(inspector_pos)
T send-keys -t ui Right
if wait_for bash -c "[ \"\$(tmux -u -L $SOCK capture-pane -p -t ui | sed -n 2p | sed -n 's/.*inspector  pos \([0-9]*\).*/\1/p')\" = $((p_click + 1)) ]"; then
  ok "Right: cursor to the next position ($p_click -> $((p_click + 1)))"; else fail "Right arrow" "$p_click -> $(inspector_pos)"; fi

# ---------------------------------------------------------------- a fatal signal restores the terminal
pid=$(pgrep -P "$(pane '#{pane_pid}')" | head -1)
[ -n "$pid" ] && kill -SEGV "$pid"
if wait_for test -s "$TMP/stty.after" && cmp -s "$TMP/stty.before" "$TMP/stty.after" && [ "$(pane '#{alternate_on}')" = 0 ]; then
  ok "SIGSEGV: terminal restored before dying"; else fail "SIGSEGV restore" "rc $(cat "$TMP/rc" 2>/dev/null)"; fi
if [ "$(cat "$TMP/rc" 2>/dev/null)" = 139 ]; then ok "SIGSEGV: still dies of the signal"; else fail "SIGSEGV rc" "$(cat "$TMP/rc" 2>/dev/null)"; fi

# ---------------------------------------------------------------- a settings key after DONE restarts
start 100 30 --demo-ui --delay-ms 10 --gen 16 --steps 8 --pace 0
if wait_for screen_has " DONE"; then ok "a short run ends: DONE"; else fail "DONE" "$(status_line)"; fi
T send-keys -t ui s
if wait_for screen_has "schedule timestep: restarted (the run had ended)"; then ok "s after DONE restarts, and says so"
else fail "s after DONE" "$(status_line)"; fi
if wait_for screen_has "timestep/confidence"; then ok "after DONE: the new run uses the new schedule"; else fail "DONE + s run" "$(status_line)"; fi
# an adaptive schedule's step count has no made-up total while it runs
start 100 30 --demo-ui --delay-ms 400 --gen 32 --threshold 0.9 --pace 0
if wait_for bash -c "tmux -u -L $SOCK capture-pane -p -t ui | sed -n '\$p' | grep -qE '^ step [1-9][0-9]* +block'"; then
  ok "threshold: 'step N' with no total while running"; else fail "adaptive step count" "$(status_line)"; fi
T send-keys -t ui q

# ---------------------------------------------------------------- keys answered while a step computes
start 100 30 --demo-ui --delay-ms 20000
wait_for screen_has "RUNNING"
T send-keys -t ui '?'
if wait_for screen_has "? or Esc closes)" && step_is 0; then ok "keys answered during a 20 s step (help shown at step 0)"; else fail "keys during a long step" "$(status_line)"; fi
T send-keys -t ui Escape
T send-keys -t ui h
if wait_for screen_has "heat: live confidence" && step_is 0; then ok "heat mode changes during the step"; else fail "heat during step" "$(status_line)"; fi
sleep 4.2                                    # let the heat message expire: nothing else wakes the UI
T resize-window -t ui -x 80 -y 30
if wait_for bash -c "! tmux -u -L $SOCK capture-pane -p -t ui | grep -q '│.*inspector'" && step_is 0; then
  ok "resize mid-step redraws at once (no other wake-up)"; else fail "resize mid-step" "$(cap | head -3)"; fi
T send-keys -t ui q
if wait_for test -s "$TMP/stty.after" ; then ok "q during a long step quits at once (step cancelled)"; else fail "q during long step" ""; fi

# ---------------------------------------------------------------- the grid layout
# --layout grid9 --gen 81: the answer as a 9x9 grid (columns 26..48 from row 2 at 100x30, the
# prompt as text left of it); clicks take grid cells; Up/Down move by grid rows (9 positions)
start 100 30 --demo-ui --delay-ms 50 --paused --layout grid9 --pace 0 --gen 81 -p "'Once upon a time'"
wait_for settled
rule='───────┼───────┼───────'
if cap | sed -n 6p | grep -qF -- "$rule" && cap | sed -n 2p | grep -q ' answer' && cap | sed -n 3p | grep -q '░ ░ ░ │ ░ ░ ░ │ ░ ░ ░'; then
  ok "grid9: a box-lined grid of masks"; else fail "grid9: grid" "$(cap | sed -n 2,8p)"; fi
pos_is() { [ "$(inspector_pos)" = "$1" ]; }
T send-keys -t ui -l $'\e[M <#' $'\e[M#<#'      # click answer cell (0,0): column 27, row 2
wait_for screen_lacks "(follows)"; p0=$(inspector_pos)
T send-keys -t ui -l $'\e[M F%' $'\e[M#F%'      # cell (2,4): column 37, row 4
if [ -n "$p0" ] && wait_for pos_is $((p0 + 22)); then ok "grid9: clicks take cells (0,0) and (2,4): pos $p0, $((p0 + 22))"
else fail "grid9: clicks" "p0 '$p0', then $(inspector_pos)"; fi
T send-keys -t ui Down
if wait_for pos_is $((p0 + 31)); then ok "grid9: Down moves one grid row (+9), over the box line"; else fail "grid9: Down" "$(inspector_pos)"; fi
T send-keys -t ui Up Up
if wait_for pos_is $((p0 + 13)); then ok "grid9: Up moves back by grid rows"; else fail "grid9: Up" "$(inspector_pos)"; fi
T send-keys -t ui l
if wait_for status_has "layout: text" && ! cap | grep -qF -- "$rule"; then ok "l: back to the text layout"; else fail "l key" "$(status_line)"; fi
T send-keys -t ui l
if wait_for status_has "layout: grid9" && cap | grep -qF -- "$rule"; then ok "l: and to the grid again"; else fail "l key back" "$(status_line)"; fi
T send-keys -t ui Space
if wait_for screen_has "DONE" && ! cap | sed -n '3,13p' | grep -q '░'; then ok "grid9: runs to DONE, every cell filled"
else fail "grid9: run" "$(cap | sed -n '3,13p')"; fi
T send-keys -t ui q
wait_for test -s "$TMP/stty.after"
start 100 30 --demo-ui --delay-ms 50 --paused --layout grid9 --gen 40
if wait_for status_has "grid9: 40 generated, needs 81: text layout"; then ok "grid9 with 40 positions: text, the status line says why"
else fail "grid9 fallback" "$(status_line)"; fi
T send-keys -t ui q
wait_for test -s "$TMP/stty.after"

# ---------------------------------------------------------------- the real engine on a tiny random-weight model
if "$BIN" synth --shape tiny-llada -o "$TMP/tiny.gguf" >/dev/null 2>&1; then
  start 100 30 -m "$TMP/tiny.gguf" --gen 32 --steps 8 --block 16 --paused -p "'hi 漢字'"
  if wait_for screen_has "step 0/8" && wait_for settled; then ok "engine: opens paused at step 0/8"; else fail "engine: start" "$(cap | tail -3)"; fi
  if cap | grep -q 'tiny-llada' && cap | sed -n '2,28p' | grep -q '░'; then ok "engine: header names the model, canvas shows masks"; else fail "engine: header/masks" "$(cap | head -3)"; fi
  T send-keys -t ui n
  if wait_for step_is 1 && wait_for settled; then ok "engine: n runs exactly one step"; else fail "engine: one step" "$(status_line)"; fi
  T send-keys -t ui Space
  if wait_for screen_has "DONE" && step_is 8; then ok "engine: runs to DONE at step 8/8"; else fail "engine: run to done" "$(status_line)"; fi
  if ! cap | sed -n '2,28p' | sed 's/│.*//' | grep -q '░'; then ok "engine: no masks left"; else fail "engine: masks left" ""; fi
  T send-keys -t ui q
  if wait_for test -s "$TMP/stty.after" && [ "$(cat "$TMP/rc")" = 0 ]; then ok "engine: q exits 0"; else fail "engine: q" "$(cat "$TMP/rc" 2>/dev/null)"; fi
else
  skip "engine in the visualizer" "unmask synth failed"
fi

# ---------------------------------------------------------------- colour fallbacks
RUN="env LANG=C.UTF-8 LC_ALL=C.UTF-8 NO_COLOR=1 TSAN_OPTIONS=log_path=$TMP/tsan"
start 100 30 --demo-ui --delay-ms 50 --paused
wait_for screen_has "PAUSED"
kinds=$(cape | sgr_colours)
if [ "$kinds" = "" ]; then ok "NO_COLOR: no colour sequences"; else fail "NO_COLOR" "colours used: $kinds"; fi
RUN="env -u NO_COLOR LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=xterm TSAN_OPTIONS=log_path=$TMP/tsan"
start 100 30 --demo-ui --delay-ms 50 --paused
wait_for screen_has "PAUSED"
kinds=$(cape | sgr_colours)
if [ "$kinds" = "ansi8" ]; then ok "8-colour terminal: only the 8 ANSI colours"; else fail "8 colours" "colours used: $kinds"; fi
T send-keys -t ui q
wait_for test -s "$TMP/stty.after"

if ls "$TMP"/tsan* >/dev/null 2>&1; then fail "ThreadSanitizer reports" "$(head -30 "$TMP"/tsan* )"; fi
finish
