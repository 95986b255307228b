#!/usr/bin/env bash
# pace.sh: paced playback (issue 18). The visualizer on the bundled model, headless in a
# private tmux server: at the default pace the canvas is still filling in after 1.5 s and
# reaches DONE later; --pace 0 is done while a run at the default pace started with it is
# not; < and > change the pace in the status line; pause, n, [ and End work while paced.
# Then `unmask record --pace`: GIF delays and cast times from the pace. No test here waits
# for something to happen *within* a time: every check compares two behaviours, or bounds
# from below what pacing makes slow (a run of 48 steps at 120 ms cannot end before 5.76 s).
SUITE=pace
. "$(dirname "$0")/lib.sh"

ROOT=${UNMASK_ROOT:-$PWD}
MODEL=$ROOT/models/unmask-demo.gguf
PROMPT="Once upon a time"

# ---------------------------------------------------------------- flags
expect_rc "--pace -1: exit 2" 2 "$BIN" --demo-ui --pace -1
expect_grep "--pace -1: says the range" "pace: '-1' is out of range \(0 to 60000\)" "$TMP/err"
expect_rc "--pace x: exit 2" 2 "$BIN" --demo-ui --pace x
expect_rc "record --pace 70000: exit 2" 2 "$BIN" record -p hi --gif "$TMP/x.gif" --pace 70000
"$BIN" --ui-help >"$TMP/help"
expect_grep "--ui-help lists --pace" '^  --pace MS +ms between steps shown while following \(default 120' "$TMP/help"
expect_grep "--ui-help lists the < and > keys (the key table)" '^  <  > +halve / double the pace' "$TMP/help"
"$BIN" record --help >"$TMP/help"
expect_grep "record --help lists --pace" '^  --pace MS +ms per step in the cast and the GIF' "$TMP/help"

if [ ! -f "$MODEL" ]; then skip pace "the bundled model $MODEL is missing"; finish; exit 0; fi

# ---------------------------------------------------------------- record --pace
# gifdelays.py GIF: the delay (centiseconds) of every frame, from the Graphic Control Extensions
cat >"$TMP/gifdelays.py" <<'EOF'
import sys
d = open(sys.argv[1], 'rb').read()
assert d[:6] in (b'GIF87a', b'GIF89a')
i = 13 + (3 << ((d[10] & 7) + 1) if d[10] & 0x80 else 0)
out = []
def skip_sub(i):
    while d[i]: i += d[i] + 1
    return i + 1
while d[i] != 0x3B:
    if d[i] == 0x21:
        if d[i + 1] == 0xF9: out.append(d[i + 4] | d[i + 5] << 8)
        i = skip_sub(i + 2)
    elif d[i] == 0x2C:
        flags = d[i + 9]; i += 10
        if flags & 0x80: i += 3 << ((flags & 7) + 1)
        i = skip_sub(i + 1)
    else: raise SystemExit('bad block %02x at %d' % (d[i], i))
print(' '.join(map(str, out)))
EOF
# casttimes.py CAST: the times of the "step N" markers, in ms, rounded
cat >"$TMP/casttimes.py" <<'EOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
print(' '.join(str(round(e[0] * 1000)) for e in map(json.loads, lines[1:]) if e[1] == 'm'))
EOF
rec() { "$BIN" record -m "$MODEL" -p "$PROMPT" --no-chat --gen 8 --steps 4 --hold-cs 100 -q "$@"; }
if command -v python3 >/dev/null 2>&1; then
  rec --pace 120 --gif "$TMP/p.gif" --cast "$TMP/p.cast"
  if [ "$(python3 "$TMP/gifdelays.py" "$TMP/p.gif")" = "12 12 12 12 100" ]; then ok "record --pace 120: GIF delays 12 cs per step, then the hold"
  else fail "record --pace 120: GIF delays" "$(python3 "$TMP/gifdelays.py" "$TMP/p.gif" 2>&1)"; fi
  if [ "$(python3 "$TMP/casttimes.py" "$TMP/p.cast")" = "120 240 360 480" ]; then ok "record --pace 120: cast step markers at 120, 240, 360, 480 ms"
  else fail "record --pace 120: cast times" "$(python3 "$TMP/casttimes.py" "$TMP/p.cast" 2>&1)"; fi
  rec --pace 500 --delay-cs 7 --gif "$TMP/q.gif" --cast "$TMP/q.cast"
  if [ "$(python3 "$TMP/gifdelays.py" "$TMP/q.gif")" = "7 7 7 7 100" ] && [ "$(python3 "$TMP/casttimes.py" "$TMP/q.cast")" = "500 1000 1500 2000" ]; then
    ok "record --pace 500 --delay-cs 7: the GIF keeps --delay-cs, the cast follows the pace"
  else fail "record --pace with --delay-cs" "$(python3 "$TMP/gifdelays.py" "$TMP/q.gif") / $(python3 "$TMP/casttimes.py" "$TMP/q.cast")"; fi
  rec --gif "$TMP/r.gif"
  if [ "$(python3 "$TMP/gifdelays.py" "$TMP/r.gif")" = "8 8 8 8 100" ]; then ok "record without --pace: the fixed 8 cs as before"
  else fail "record without --pace" "$(python3 "$TMP/gifdelays.py" "$TMP/r.gif")"; fi
  # --pace 0: real times; the engine takes milliseconds per step, far from 120
  rec --pace 0 --gif "$TMP/z.gif" --cast "$TMP/z.cast"
  zt=$(python3 "$TMP/casttimes.py" "$TMP/z.cast")
  if [ -s "$TMP/z.gif" ] && [ "$(echo "$zt" | wc -w)" = 4 ] && [ "$zt" != "120 240 360 480" ] && [ "$zt" = "$(echo "$zt" | tr ' ' '\n' | sort -n | tr '\n' ' ' | sed 's/ $//')" ]; then
    ok "record --pace 0: real, increasing cast times ($zt ms)"
  else fail "record --pace 0" "$zt"; fi
else
  skip "record --pace" "python3 not installed"
fi

# ---------------------------------------------------------------- the visualizer on the bundled model
. "$(dirname "$0")/tmuxlib.sh"
tmux_begin pace "pace: visualizer"
start() {  # start NAME ARGS... : a 120x30 session NAME running unmask ARGS in the repository root
  local s=$1; shift
  T kill-session -t "$s" 2>/dev/null
  T new-session -d -s "$s" -x 120 -y 30 "cd '$ROOT'; $RUN $BIN $*; echo \$? >$TMP/rc.$s"
}
status_of() { T capture-pane -p -t "$1" | sed -n '$p'; }
step_of() { status_of "$1" | sed -n 's/^ *step \([0-9]*\)[/ ].*/\1/p'; }
masks_of() { status_of "$1" | sed -n 's/.* masks \([0-9]*\) .*/\1/p'; }
has() { status_of "$1" | grep -qF -- "$2"; }
lacks() { ! status_of "$1" | grep -qF -- "$2"; }
step_is() { [ "$(step_of "$1")" = "$2" ]; }
step_over() { local k; k=$(step_of "$1"); [ -n "$k" ] && [ "$k" -gt "$2" ]; }

# ---- default pace: still filling in after 1.5 s, DONE later (48 steps at 120 ms >= 5.76 s)
start a -p "'$PROMPT'"
if wait_for step_over a 0; then ok "default pace: the run starts (step $(step_of a))"; else fail "default pace: start" "$(status_of a)"; fi
sleep 1.5
k=$(step_of a); m=$(masks_of a)
if [ -n "$k" ] && [ "$k" -lt 48 ] && [ -n "$m" ] && [ "$m" -gt 0 ] && lacks a DONE; then
  ok "default pace: 1.5 s in, still filling in (step $k/48, $m masks)"
else fail "default pace: still filling in after 1.5 s" "$(status_of a)"; fi
if has a "pace 120 ms" && has a RUNNING; then ok "default pace: the status line says pace 120 ms, RUNNING"; else fail "status pace" "$(status_of a)"; fi
if long_wait has a DONE && step_is a 48 && [ "$(masks_of a)" = 0 ]; then ok "default pace: reaches DONE at step 48/48, no masks"
else fail "default pace: DONE" "$(status_of a)"; fi
T send-keys -t a q
wait_for test -s "$TMP/rc.a"

# ---- --pace 0 against the default pace, started together: the unpaced one is DONE first
# (needs an engine well under 120 ms a step; measured first with generate, else skipped)
ms=$("$BIN" generate -p "$PROMPT" -t 1 -q --json 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin); print(int(1000*j["generate_s"]/max(1,j["steps_run"])))' 2>/dev/null)
if [ -n "$ms" ] && [ "$ms" -lt 40 ]; then
  start a -p "'$PROMPT'" -t 1
  start b -p "'$PROMPT'" -t 1 --pace 0
  if long_wait has b DONE; then
    k=$(step_of a)
    if [ -n "$k" ] && [ "$k" -lt 48 ] && lacks a DONE; then ok "--pace 0: DONE while the default pace is at step $k/48 (engine $ms ms/step)"
    else fail "--pace 0 vs default" "paced run: $(status_of a)"; fi
  else fail "--pace 0: reaches DONE" "$(status_of b)"; fi
  if has b "pace off"; then ok "--pace 0: the status line says pace off"; else fail "--pace 0 status" "$(status_of b)"; fi
  T send-keys -t a q; T send-keys -t b q
else
  skip "--pace 0 against the default pace" "the engine takes ${ms:-?} ms a step here (needs < 40)"
fi

# ---- < and > change the pace shown
start c -p "'$PROMPT'"
wait_for has c "pace 120 ms"
T send-keys -t c '<'
if wait_for has c "pace 60 ms"; then ok "< halves the pace (60 ms)"; else fail "<" "$(status_of c)"; fi
T send-keys -t c '>' '>'
if wait_for has c "pace 240 ms"; then ok "> doubles the pace (240 ms)"; else fail ">" "$(status_of c)"; fi
T send-keys -t c '<' '<' '<' '<' '<'
if wait_for has c "pace off"; then ok "< below 15 ms turns the pace off"; else fail "< to off" "$(status_of c)"; fi
if wait_for has c DONE; then ok "pace off: the display catches up with the engine at once"; else fail "pace off catches up" "$(status_of c)"; fi
T send-keys -t c '>'
if wait_for has c "pace 15 ms"; then ok "> from off: 15 ms"; else fail "> from off" "$(status_of c)"; fi
T send-keys -t c q

# ---- pause, n, [, End and resume while paced (the engine is ahead of the display)
start d -p "'$PROMPT'" --pace 300
wait_for step_over d 1
T send-keys -t d Space
settled() { has d PAUSED && lacks d finishing; }
if wait_for settled; then ok "paced: space pauses"; else fail "paced: pause" "$(status_of d)"; fi
p1=$(step_of d); sleep 1; p2=$(step_of d)
if [ -n "$p1" ] && [ "$p1" = "$p2" ] && [ "$p1" -lt 48 ]; then ok "paced: paused at step $p1, the display stays"; else fail "paced: paused stays" "$p1 -> $p2"; fi
T send-keys -t d n
if wait_for step_is d $((p2 + 1)); then
  sleep 0.7
  if step_is d $((p2 + 1)) && has d PAUSED; then ok "paced: n shows exactly one more step ($((p2 + 1)))"; else fail "paced: n one step" "$(status_of d)"; fi
else fail "paced: n" "$p2 -> $(status_of d)"; fi
T send-keys -t d '['
if wait_for has d "REWIND $p2/"; then ok "paced: [ rewinds at once (REWIND $p2)"; else fail "paced: [" "$(status_of d)"; fi
T send-keys -t d End
if wait_for lacks d REWIND && step_over d "$p2"; then ok "paced: End jumps to the newest step at once (step $(step_of d))"; else fail "paced: End" "$(status_of d)"; fi
T send-keys -t d Home
wait_for has d "REWIND 0/"
T send-keys -t d Space
if wait_for has d RUNNING && lacks d REWIND; then ok "paced: space after a scrub resumes from the live step"; else fail "paced: resume" "$(status_of d)"; fi
T send-keys -t d '<' '<' '<' '<' '<'
if wait_for has d DONE; then ok "paced: runs on to DONE"; else fail "paced: DONE" "$(status_of d)"; fi
T send-keys -t d q
if wait_for test -s "$TMP/rc.d" && [ "$(cat "$TMP/rc.d")" = 0 ]; then ok "paced: q exits 0"; else fail "paced: q" "$(cat "$TMP/rc.d" 2>/dev/null)"; fi

# ---- the help overlay lists the keys
start e --demo-ui --paused
wait_for has e PAUSED
T send-keys -t e '?'
if wait_for bash -c "tmux -u -L $SOCK capture-pane -p -t e | grep -q '<  >  *halve / double the pace'"; then ok "? lists < > (pace)"; else fail "? pace keys" "$(T capture-pane -p -t e)"; fi
T send-keys -t e q q

if ls "$TMP"/tsan* >/dev/null 2>&1; then fail "ThreadSanitizer reports" "$(head -30 "$TMP"/tsan*)"; fi
finish
