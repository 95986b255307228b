#!/usr/bin/env bash
# hostile_signals.sh: every signal that ends the process, and settings the engine rejects,
# in the visualizer and in `unmask record` (issue 14, points 3 and 4).
#
# The visualizer runs in a private tmux server; after it exits, the pane's own terminal
# state is read back from tmux (alternate screen, cursor, mouse tracking flags) and the
# modes from `stty` in the same pane, so "restored" is what the terminal emulator saw, not
# what unmask thinks it wrote. Recordings are checked with independent readers: the GIF's
# header and 0x3B trailer (and gifsicle when present), the cast line by line with python3's
# json. A directory holding exactly the finished files means no temporary file was left.
# Every wait is bounded (wait_for, wait_exit, timeout): nothing here can hang.
SUITE=hostile_signals
. "$(dirname "$0")/lib.sh"
ROOT=${UNMASK_ROOT:-$PWD}
MODEL=$ROOT/models/unmask-demo.gguf
SLOW=1; [ "${UNMASK_VARIANT:-release}" = release ] || SLOW=4     # sanitizer builds run slower
HAVE_PY=1; command -v python3 >/dev/null 2>&1 || HAVE_PY=0
HAVE_GIFSICLE=1; command -v gifsicle >/dev/null 2>&1 || HAVE_GIFSICLE=0
# the output module removes its temporary files on crash signals, through the sigexit hook
# main() registers (src/base/outfile.h, src/base/sigexit.h)

. "$(dirname "$0")/tmuxlib.sh"    # wait_for here; the tmux server only for the visualizer part
# wait_exit PID SECONDS: wait for a background child; its status in $rc (137 + a failure if killed)
wait_exit() {
  local i n=$(($2 * 10 * SLOW))
  for ((i = 0; i < n; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$1" 2>/dev/null; then kill -KILL "$1"; wait "$1" 2>/dev/null; rc=137; return 1; fi
  wait "$1" 2>/dev/null; rc=$?; return 0
}
# gif_ok FILE: a GIF89a header and the 0x3B trailer (and gifsicle decodes it, when present)
gif_ok() {
  [ -s "$1" ] && [ "$(head -c 6 "$1")" = GIF89a ] && [ "$(tail -c 1 "$1" | od -An -tx1 | tr -d ' ')" = 3b ] || return 1
  [ $HAVE_GIFSICLE = 0 ] || gifsicle -o /dev/null "$1" 2>/dev/null
}
# cast_ok FILE: every line JSON, a version 2 header, then [time, "o"|"m"|"r", text] events
cast_ok() {
  [ -s "$1" ] || return 1
  [ $HAVE_PY = 0 ] && return 0
  python3 - "$1" <<'EOF'
import json, sys
lines = open(sys.argv[1], encoding='utf-8').read().split('\n')
assert lines[-1] == '', 'no final newline'
h = json.loads(lines[0]); assert h['version'] == 2, h
for l in lines[1:-1]:
    t, k, s = json.loads(l); assert k in ('o', 'm', 'r') and isinstance(s, str) and t >= 0
EOF
}
# only DIR NAMES...: DIR holds exactly these files (so no temporary file either)
only() { local d=$1; shift; [ "$(ls -A "$d" | sort | tr '\n' ' ')" = "$(for f in "$@"; do echo "$f"; done | sort | tr '\n' ' ')" ]; }
# the message `unmask generate` prints for these flags (after "unmask generate: ")
generate_says() {   # the last 'unmask generate: ' message; its exit status in $TMP/gen.rc
  { timeout -s KILL $((60 * SLOW)) "$BIN" generate -m "$MODEL" "$@" 2>&1 >/dev/null </dev/null; echo $? >"$TMP/gen.rc"; } \
    | tr '\r' '\n' | sed -n 's/^unmask generate: //p' | tail -1
}
last_unmask_line() { tr '\r' '\n' <"$1" | sed -n 's/^unmask: //p' | tail -1; }

if [ ! -f "$MODEL" ]; then skip "$SUITE" "the bundled model $MODEL is missing"; finish; exit 0; fi

# ================================================================ unmask record (no terminal)
# record_bg DIR ARGS...: `unmask record` in the background in DIR, INT and QUIT at their
# defaults (a plain `cmd &` in a script ignores them, and unmask keeps ignored signals so)
record_bg() {
  local d=$1; shift
  rm -rf "$d"; mkdir -p "$d"
  ( cd "$d" && trap - INT QUIT && exec "$BIN" record -m "$MODEL" -t 1 "$@" </dev/null >/dev/null 2>"$d.err" ) &
  rpid=$!
}
mid_run() { grep -q 'step [3-9][0-9]*/' "$1.err" 2>/dev/null; }

for sig in HUP QUIT USR1 USR2 ALRM XCPU XFSZ VTALRM PROF; do
  if sig_ignored $sig; then
    skip "record SIG$sig" "SIG$sig is ignored in this shell (started under nohup or as a background job?): it cannot be delivered"
    continue
  fi
  d=$TMP/rec-$sig
  record_bg "$d" -p hi --gen 200 --steps 200 --gif x.gif --cast x.cast
  wait_for mid_run "$d"
  kill -"$sig" "$rpid"
  wait_exit "$rpid" 60
  want=$((128 + $(kill -l "$sig")))
  if [ "$rc" = "$want" ] && grep -q 'interrupted after step' "$d.err"; then ok "record SIG$sig: exit $want, says so"
  else fail "record SIG$sig: exit $want" "rc $rc: $(tr '\r' '\n' <"$d.err" | tail -2)"; fi
  if only "$d" x.cast x.gif && gif_ok "$d/x.gif" && cast_ok "$d/x.cast"; then ok "record SIG$sig: GIF and cast finished, nothing else left"
  else fail "record SIG$sig: files" "$(ls -lA "$d")"; fi
done

# SIGPIPE is ignored (a write to a closed pipe fails instead): the run goes on to the end
d=$TMP/rec-PIPE
record_bg "$d" -p hi --gen 48 --steps 48 --gif x.gif --cast x.cast
wait_for mid_run "$d"
kill -PIPE "$rpid"
wait_exit "$rpid" 120
if [ "$rc" = 0 ] && grep -q 'recorded [0-9]* steps' "$d.err" && ! grep -q interrupted "$d.err" && only "$d" x.cast x.gif && gif_ok "$d/x.gif" && cast_ok "$d/x.cast"
then ok "record SIGPIPE: ignored, the whole run recorded"; else fail "record SIGPIPE" "rc $rc: $(tr '\r' '\n' <"$d.err" | tail -2); $(ls -A "$d")"; fi

# nohup: a SIGHUP ignored when unmask starts stays ignored
d=$TMP/rec-nohup
rm -rf "$d"; mkdir -p "$d"
( cd "$d" && trap '' HUP && exec "$BIN" record -m "$MODEL" -t 1 -p hi --gen 48 --steps 48 --gif x.gif </dev/null >/dev/null 2>"$d.err" ) &
rpid=$!
wait_for mid_run "$d"
kill -HUP "$rpid"
wait_exit "$rpid" 120
if [ "$rc" = 0 ] && grep -q 'recorded [0-9]* steps' "$d.err" && ! grep -q interrupted "$d.err" && only "$d" x.gif && gif_ok "$d/x.gif"; then ok "record under nohup: SIGHUP stays ignored"
else fail "record under nohup" "rc $rc: $(tr '\r' '\n' <"$d.err" | tail -2)"; fi

# a crash signal: dies of it, no finished file pretends to be whole
d=$TMP/rec-SEGV
record_bg "$d" -p hi --gen 200 --steps 200 --gif x.gif --cast x.cast
wait_for mid_run "$d"
kill -SEGV "$rpid"
wait_exit "$rpid" 60 2>/dev/null      # bash reports the death on stderr
if [ "$rc" = 139 ] && [ ! -e "$d/x.gif" ] && [ ! -e "$d/x.cast" ]; then ok "record SIGSEGV: dies of it, no half file under the final names"
else fail "record SIGSEGV" "rc $rc: $(ls -A "$d")"; fi
if only "$d"; then ok "record SIGSEGV: temporary files removed"; else fail "record SIGSEGV: temporaries" "$(ls -A "$d")"; fi

# settings the engine rejects: the message `generate` prints, exit 1, nothing written
python3 -c 'print("word " * 24000, end="")' >"$TMP/big.txt" 2>/dev/null || printf 'word %.0s' $(seq 24000) >"$TMP/big.txt"
BIG=$(cat "$TMP/big.txt")
[ "${#BIG}" -ge 120000 ] || fail "120 KB prompt made" "${#BIG} bytes"
check_record_rejects() {  # NAME ARGS...
  local name=$1; shift
  local want d=$TMP/rec-bad
  want=$(generate_says "$@")
  local want_rc; want_rc=$(cat "$TMP/gen.rc")    # 1: the engine refused; 2: the flag parser did
  rm -rf "$d"; mkdir -p "$d"
  (cd "$d" && timeout -s KILL $((60 * SLOW)) "$BIN" record -m "$MODEL" -q "$@" --gif x.gif --cast x.cast </dev/null >/dev/null 2>"$d.err"); rc=$?
  got=$(tr '\r' '\n' <"$d.err" | sed -n 's/^unmask record: //p' | tail -1)
  if [ "$want_rc" != 0 ] && [ "$rc" = "$want_rc" ] && [ -n "$want" ] && [ "$got" = "$want" ] && only "$d"; then ok "record $name: exit $rc as generate, generate's message, no file"
  else fail "record $name" "rc $rc (generate $want_rc), got '$got', generate says '$want', files: $(ls -A "$d")"; fi
}
check_record_rejects "--gen 300 (context 256)" -p hi --gen 300
check_record_rejects "120 KB prompt" -p "$BIG"
check_record_rejects "--eps 1" -p hi --eps 1

# ================================================================ the visualizer (tmux)
tmux_begin hostile "visualizer signals"
# the pane runs ui.sh: stty before, unmask (argv from $TMP/args, under timeout), its status,
# stty after; then it stays open so tmux still reports the terminal's state
cat >"$TMP/ui.sh" <<EOF
#!/usr/bin/env bash
cd "\$1"
stty -g >$TMP/stty.before
mapfile -d '' args <$TMP/args
env -u NO_COLOR LANG=C.UTF-8 LC_ALL=C.UTF-8 timeout --foreground -s KILL $((120 * SLOW)) $BIN "\${args[@]}" 2>$TMP/ui.err
echo \$? >$TMP/rc
stty -g >$TMP/stty.after
stty -a >$TMP/stty.a
exec sleep 600
EOF
start() {  # start DIR ARGS... : a 100x30 session running unmask ARGS in DIR
  local d=$1; shift
  T kill-session -t ui 2>/dev/null
  rm -f "$TMP/rc" "$TMP/stty.before" "$TMP/stty.after" "$TMP/stty.a" "$TMP/ui.err"
  rm -rf "$d"; mkdir -p "$d"
  printf '%s\0' "$@" >"$TMP/args"
  T new-session -d -s ui -x 100 -y 30 "bash $TMP/ui.sh $d"
}
status_line() { cap | sed -n '$p'; }
screen_has() { cap | grep -qF -- "$1"; }
# the same text where the view may have wrapped it across lines: compared without spaces and newlines
screen_has_wrapped() { cap | tr -d ' \n' | grep -qF -- "$(printf '%s' "$1" | tr -d ' \n')"; }
screen_lacks() { ! cap | grep -qF -- "$1"; }
status_has() { status_line | grep -qF -- "$1"; }
pane() { T list-panes -t ui -F "$1"; }
exited() { test -s "$TMP/stty.a"; }
run_shown() { status_line | grep -qE '^ step [0-9]+/' && ! status_has ERROR; }   # a snapshot, no error
upid() {  # the unmask process under the pane (below bash and timeout)
  local p c
  p=$(pane '#{pane_pid}')
  for _ in 1 2 3; do
    c=$(pgrep -P "$p" | head -1); [ -n "$c" ] || return 1
    [ "$(cat "/proc/$c/comm" 2>/dev/null)" = unmask ] && { echo "$c"; return 0; }
    p=$c
  done
  return 1
}
stty_words() { tr ' ;' '\n\n' <"$TMP/stty.a"; }      # "icanon" vs "-icanon", one a line
# restored: modes as before, canonical input and echo on, cursor shown, main screen, no mouse
restored() {
  cmp -s "$TMP/stty.before" "$TMP/stty.after" || return 1
  stty_words | grep -qx icanon && stty_words | grep -qx echo || return 1
  [ "$(pane '#{alternate_on} #{cursor_flag} #{mouse_any_flag}#{mouse_standard_flag}#{mouse_button_flag}#{mouse_all_flag}#{mouse_sgr_flag}')" = "0 1 00000" ]
}
term_state() { echo "alt/cursor/mouse: $(pane '#{alternate_on} #{cursor_flag} #{mouse_any_flag}#{mouse_standard_flag}#{mouse_button_flag}#{mouse_all_flag}#{mouse_sgr_flag}'); stty: $(stty_words 2>/dev/null | grep -xE -- '-?(icanon|echo)' | tr '\n' ' ')"; }

# the terminal state is read from tmux: check that a running visualizer shows up as changed
d=$TMP/ui-probe
start "$d" --demo-ui --delay-ms 60
wait_for status_has "step "
if [ "$(pane '#{alternate_on} #{cursor_flag}')" = "1 0" ] && [ "$(pane '#{mouse_standard_flag}#{mouse_button_flag}#{mouse_all_flag}')" != 000 ]
then ok "probe: a running visualizer shows as alternate screen, hidden cursor, mouse on"; else fail "probe" "$(term_state)"; fi
T send-keys -t ui q
wait_for exited
if [ "$(cat "$TMP/rc")" = 0 ] && restored; then ok "probe: q restores all of it"; else fail "probe: q" "rc $(cat "$TMP/rc" 2>/dev/null) $(term_state)"; fi

# graceful signals: --gif/--cast and a g recording open; all finished, terminal restored
for sig in QUIT USR1 USR2 ALRM HUP VTALRM PROF XCPU XFSZ RTMIN; do
  d=$TMP/ui-$sig
  start "$d" --demo-ui --delay-ms 60 --gif a.gif --cast a.cast
  wait_for status_has "step "
  T send-keys -t ui g
  wait_for status_has "recording unmask-" || fail "SIG$sig: g starts a recording" "$(status_line)"
  pid=$(upid)
  [ -n "$pid" ] && kill -"$sig" "$pid"
  if ! wait_for exited; then fail "SIG$sig ends the visualizer" "pid '$pid': $(status_line)"; continue; fi
  want=$((128 + $(kill -l "$sig")))
  if [ "$(cat "$TMP/rc")" = "$want" ]; then ok "SIG$sig: exit $want"; else fail "SIG$sig: exit $want" "rc $(cat "$TMP/rc")"; fi
  if restored; then ok "SIG$sig: terminal restored (modes, cursor, main screen, mouse off)"; else fail "SIG$sig: terminal" "$(term_state)"; fi
  g=$(ls -A "$d" | grep -E '^unmask-[0-9]{8}-[0-9]{6}(-[0-9]+)?\.gif$')
  if [ -n "$g" ] && only "$d" a.gif a.cast "$g" && gif_ok "$d/a.gif" && gif_ok "$d/$g" && cast_ok "$d/a.cast" && grep -q "saved $g" "$TMP/ui.err"
  then ok "SIG$sig: --gif, --cast and the g GIF finished, no temporary file"; else fail "SIG$sig: files" "$(ls -lA "$d"; cat "$TMP/ui.err")"; fi
done

# SIGPIPE is ignored (the terminal is not a pipe; a FIFO recording fails on its own)
d=$TMP/ui-PIPE
start "$d" --demo-ui --delay-ms 60 --gif a.gif
wait_for status_has "step "
pid=$(upid)
[ -n "$pid" ] && kill -PIPE "$pid"
T send-keys -t ui n                                # keys still answered after it
T send-keys -t ui q
wait_for exited
if [ "$(cat "$TMP/rc" 2>/dev/null)" = 0 ] && restored && only "$d" a.gif && gif_ok "$d/a.gif"; then ok "SIGPIPE: ignored, q then exits 0 with the GIF finished"
else fail "SIGPIPE" "rc $(cat "$TMP/rc" 2>/dev/null) $(term_state) $(ls -A "$d")"; fi

# crash signals: terminal restored before dying of the signal
for sig in SEGV ABRT BUS; do
  d=$TMP/ui-$sig
  start "$d" --demo-ui --delay-ms 60 --gif a.gif --cast a.cast
  wait_for status_has "step "
  T send-keys -t ui g
  wait_for status_has "recording unmask-"
  pid=$(upid)
  [ -n "$pid" ] && kill -"$sig" "$pid"
  wait_for exited
  want=$((128 + $(kill -l "$sig")))
  if [ "$(cat "$TMP/rc" 2>/dev/null)" = "$want" ] && restored; then ok "SIG$sig: terminal restored, dies of it ($want)"
  else fail "SIG$sig" "rc $(cat "$TMP/rc" 2>/dev/null) $(term_state)"; fi
  if ls -A "$d" | grep -qxE 'a\.gif|a\.cast|unmask-[0-9-]+\.gif'; then fail "SIG$sig: no half file under a final name" "$(ls -A "$d")"
  else ok "SIG$sig: no half file under a final name"; fi
  if only "$d"; then ok "SIG$sig: temporary files removed"; else fail "SIG$sig: temporaries" "$(ls -A "$d")"; fi
done

# suspend (SIGTSTP, curses's own handler): the terminal restored while stopped, re-entered on fg
T kill-session -t ui 2>/dev/null
T new-session -d -s ui -x 100 -y 30 "env -u NO_COLOR LANG=C.UTF-8 LC_ALL=C.UTF-8 PS1='$ ' bash --norc --noprofile -i"
sleep 0.3
T send-keys -t ui "cd $TMP && $BIN --demo-ui --delay-ms 60" Enter
wait_for status_has "step "
pid=$(upid)
[ -n "$pid" ] && kill -TSTP "$pid"
if wait_for screen_has "Stopped" && [ "$(pane '#{alternate_on} #{cursor_flag} #{mouse_standard_flag}#{mouse_button_flag}#{mouse_all_flag}')" = "0 1 000" ]
then ok "SIGTSTP: stopped with the terminal restored"; else fail "SIGTSTP" "pid '$pid' state $(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null) $(pane '#{alternate_on} #{cursor_flag} #{mouse_standard_flag}#{mouse_button_flag}#{mouse_all_flag}') $(cap | grep -v '^$' | tail -2)"; fi
T send-keys -t ui "fg" Enter
if wait_for status_has "step " && [ "$(pane '#{alternate_on} #{cursor_flag}')" = "1 0" ]; then ok "fg: the visualizer is back on the alternate screen"
else fail "fg" "$(pane '#{alternate_on} #{cursor_flag}') $(status_line)"; fi
T send-keys -t ui q
wait_for screen_lacks "step "
T send-keys -t ui 'echo rc=$?' Enter
if wait_for screen_has "rc=0" && [ "$(pane '#{alternate_on} #{cursor_flag}')" = "0 1" ]; then ok "q after fg: exit 0, terminal restored"; else fail "q after fg" "$(cap | grep -v '^$' | tail -2)"; fi

# ================================================================ engine errors in the visualizer
# Settings the engine rejects: the message on screen (never "starting..." for ever), and
# after q the message `generate` prints, on stderr, with exit 1. A check done before the
# visualizer starts (a flag parser) may reject the same settings at once instead: then it
# must exit non-zero with generate's message, without opening the screen.
check_ui_rejects() {  # NAME ARGS...
  local name=$1; shift
  local want d=$TMP/ui-bad
  want=$(generate_says "$@")
  [ -n "$want" ] || { fail "$name: generate rejects it" "no message"; return; }
  start "$d" -m "$MODEL" "$@"
  if wait_for bash -c "tmux -u -L $SOCK capture-pane -p -t ui | grep -qF 'cannot start: ' || test -s $TMP/stty.a"; then :; fi
  if exited; then
    if [ "$(cat "$TMP/rc")" != 0 ] && [ "$(last_unmask_line "$TMP/ui.err")" = "$want" ]; then ok "$name: rejected before the screen opens, generate's message"
    else fail "$name: rejected at once" "rc $(cat "$TMP/rc"): $(tail -c 300 "$TMP/ui.err")"; fi
    return
  fi
  if screen_has_wrapped "cannot start: $want" && status_has "error: " && status_has "ERROR"; then ok "$name: the message on screen, ERROR in the status line"
  else fail "$name: on screen" "$(cap | grep -v '^ *$' | head -4)"; fi
  T send-keys -t ui q
  if wait_for exited && [ "$(cat "$TMP/rc")" = 1 ] && [ "$(last_unmask_line "$TMP/ui.err")" = "$want" ] && restored
  then ok "$name: q: exit 1, 'unmask: $want' on stderr"; else fail "$name: after q" "rc $(cat "$TMP/rc" 2>/dev/null): $(tr '\r' '\n' <"$TMP/ui.err" | tail -2)"; fi
}
check_ui_rejects "--gen 300 past the context of 256" -p hi --gen 300
check_ui_rejects "a 120 KB prompt" -p "$BIG"
check_ui_rejects "--eps 1" -p hi --eps 1

# a restart the engine rejects (the prompt editor): the error shown, a good restart clears it
d=$TMP/ui-edit
start "$d" -m "$MODEL" -p hi --gen 240 --steps 240
wait_for status_has "step "
long=$(printf 'the cat sat on the mat %.0s' $(seq 12))
T send-keys -t ui e C-u
T send-keys -t ui -l "$long"
T send-keys -t ui Enter
# a long error: the status line cuts it after a word ("…"), the canvas's last rows hold it whole
if wait_for screen_has_wrapped "error: prompt of" && screen_has_wrapped "exceeds the model's trained context of 256 tokens" \
   && status_has "error: " && status_has "ERROR"; then ok "e: a prompt past the context: the error in the status line, whole above it"
else fail "e: bad prompt" "$(cap | tail -n 6)"; fi
T send-keys -t ui e C-u
T send-keys -t ui -l "hi there"
T send-keys -t ui Enter
if wait_for run_shown && screen_has "hi there"; then ok "e: a good prompt restarts and clears the error"
else fail "e: recovery" "$(status_line)"; fi
T send-keys -t ui e C-u
T send-keys -t ui -l "$long"
T send-keys -t ui Enter
wait_for status_has "ERROR"
want=$(generate_says -p "$long" --gen 240 --steps 240)
T send-keys -t ui q
if wait_for exited && [ "$(cat "$TMP/rc")" = 1 ] && [ -n "$want" ] && [ "$(last_unmask_line "$TMP/ui.err")" = "$want" ]
then ok "q with the error standing: exit 1, generate's message"; else fail "q with the error" "rc $(cat "$TMP/rc" 2>/dev/null): $(tail -c 300 "$TMP/ui.err"); generate: $want"; fi

finish
