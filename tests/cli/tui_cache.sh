#!/usr/bin/env bash
# tui_cache.sh: the K/V cache in the visualizer, headless (as tui.sh: the real binary in a
# private tmux server). The header names the shown step's cache, the status line its rows
# computed ("refresh" on a full pass), the k key cycles none -> prefix -> dual -> none from
# the next step, rewinding shows each step's own cache, the heat mode "K/V cache" has its
# legend; where caching is unavailable (--demo-ui --gpu stands in for the CUDA backend) k is
# refused with a message. Then the real engine on the bundled model, and `unmask record`,
# whose cast's screen at step 1 is rebuilt by a small terminal written here.
SUITE=tui_cache
. "$(dirname "$0")/lib.sh"

ROOT=${UNMASK_ROOT:-$PWD}
DEMO=$ROOT/models/unmask-demo.gguf
. "$(dirname "$0")/tmuxlib.sh"
tmux_begin cache tui_cache

start() {  # start W H ARGS... : a fresh session running unmask ARGS
  local w=$1 h=$2; shift 2
  T kill-session -t ui 2>/dev/null
  rm -f "$TMP/rc"
  T new-session -d -s ui -x "$w" -y "$h" "$RUN $BIN $*; echo \$? >$TMP/rc"
}
quit() { T send-keys -t ui q; wait_for test -s "$TMP/rc"; }
header() { cap | sed -n 1p; }
legend() { cap | tail -n 2 | head -n 1; }
status_line() { cap | sed -n '$p'; }
step_now() { status_line | sed -n 's/^ *step \([0-9]*\)[/ ].*/\1/p'; }
settled() { status_line | grep -q 'PAUSED *$' && ! status_line | grep -q finishing; }
step_is() { [ "$(step_now)" = "$1" ] && settled; }
has() { cap | grep -qF -- "$1"; }
header_has() { header | grep -qF -- "$1"; }
status_has() { status_line | grep -qF -- "$1"; }
# rows A B: the status line's "rows A/B" (A = "0" at step 0, B empty then)
rows() { status_line | sed -n 's/.*  rows \([0-9]*\)\/*\([0-9]*\).*/\1 \2/p'; }
one() { local name=$1; shift; if wait_for "$@"; then ok "$name"; else fail "$name" "$(header) | $(status_line)"; fi; }

# ---------------------------------------------------------------- the synthetic source: off, k, rows
# 160 columns: the status line's numbers stay clear of a message
start 160 30 --demo-ui --paused --pace 0 --delay-ms 20 --gen 48 --steps 24 --block 16 -p "'The quick'"
one "header: cache off at start" header_has "cache off"
one "status: rows 0 at step 0 (no pass)" status_has "  rows 0  "
T send-keys -t ui n
wait_for step_is 1
read -r r n <<<"$(rows)"
if [ -n "$n" ] && [ "$r" = "$n" ] && ! status_has refresh; then ok "no cache: every row computed (rows $r/$n)"; else fail "no cache rows" "$(status_line)"; fi
canvas=$n
T send-keys -t ui k
one "k: cache prefix from the next step" status_has "cache prefix: from the next step"
one "k: the shown step keeps its cache (off)" header_has "cache off"
T send-keys -t ui n
wait_for step_is 2
if header_has "cache prefix/f16 · " && header | grep -qE 'prefix/f16 · [0-9.]+ KiB'; then ok "header: cache prefix/f16 and its bytes"
else fail "header prefix" "$(header)"; fi
if [ "$(rows)" = "$canvas $canvas" ] && status_has " refresh "; then ok "status: the first cached step refreshes (rows $canvas/$canvas refresh)"
else fail "prefix refresh" "$(status_line)"; fi
T send-keys -t ui n
wait_for step_is 3
read -r r n <<<"$(rows)"
if [ -n "$r" ] && [ "$n" = "$canvas" ] && [ "$r" -lt "$canvas" ] && ! status_has refresh; then ok "prefix: the next step computes fewer rows ($r/$n)"
else fail "prefix partial" "$(status_line)"; fi
prefix_rows=$r
T send-keys -t ui k
one "k: then dual" status_has "cache dual: from the next step"
T send-keys -t ui n
wait_for step_is 4
if header_has "cache dual/f16" && status_has " refresh "; then ok "dual: a new mode refreshes"; else fail "dual refresh" "$(header) | $(status_line)"; fi
T send-keys -t ui n
wait_for step_is 5
read -r r n <<<"$(rows)"
if [ -n "$r" ] && [ "$r" -le 16 ] && [ "$r" -lt "$prefix_rows" ]; then ok "dual: the active block only (rows $r/$n, block 16)"
else fail "dual partial" "$(status_line)"; fi

# ---------------------------------------------------------------- the cache heat mode
# canvas_fg FROM,TO: the 256-colour foregrounds on those rows left of the panel border
canvas_fg() { T capture-pane -p -e -t ui | sed -n "$1p" | sed -E $'s/(\x1b\\[[0-9;]*m)*│.*//' | grep -o '38;5;[0-9]*' | sort -u | tr '\n' ' '; }
prompt_commit=$(canvas_fg 2)
T send-keys -t ui h h h h
one "h: the K/V cache heat mode" status_has "heat: K/V cache"
if legend | grep -qF "recomputed" && legend | grep -qF "stale (cached K/V)"; then ok "cache heat: legend names recomputed and stale"
else fail "cache legend" "$(legend)"; fi
# under dual the prompt is stale: one colour, not the prompt's own; the generated rows hold
# the recomputed active block and the stale masks after it, that same colour among them
prompt_cache=$(canvas_fg 2); gen_cache=$(canvas_fg 3,27)
if [ "$(wc -w <<<"$prompt_cache")" = 1 ] && [ "$prompt_cache" != "$prompt_commit" ] && [[ " $gen_cache" == *" $prompt_cache"* ]] &&
   [ "$(wc -w <<<"$gen_cache")" -ge 2 ]; then ok "cache heat: prompt and later blocks stale ($prompt_cache), the block recomputed ($gen_cache)"
else fail "cache heat colours" "prompt '$prompt_commit' -> '$prompt_cache', generated '$gen_cache'"; fi

# ---------------------------------------------------------------- rewinding shows each step's own cache
T send-keys -t ui '['
if wait_for status_has "REWIND 4/5" && header_has "cache dual/f16" && status_has " refresh "; then ok "rewind to step 4: its refresh"
else fail "rewind 4" "$(header) | $(status_line)"; fi
T send-keys -t ui '[' '['
if wait_for status_has "REWIND 2/5" && header_has "cache prefix/f16"; then ok "rewind to step 2: cache prefix"
else fail "rewind 2" "$(header) | $(status_line)"; fi
T send-keys -t ui Home
if wait_for status_has "REWIND 0/5" && header_has "cache off" && status_has "  rows 0  "; then ok "rewind to step 0: cache off, rows 0"
else fail "rewind 0" "$(header) | $(status_line)"; fi
T send-keys -t ui End k
one "k: back to none" status_has "cache none: from the next step"
T send-keys -t ui n
if wait_for step_is 6 && header_has "cache off" && [ "$(rows)" = "$canvas $canvas" ]; then ok "none again: cache off, every row"
else fail "none again" "$(header) | $(status_line)"; fi
T send-keys -t ui '?'
one "help overlay lists k" has "cycle the K/V cache: none, prefix, dual"
quit

"$BIN" --ui-help >"$TMP/help" 2>&1
expect_grep "--ui-help lists k" '^  k +cycle the K/V cache' "$TMP/help"
expect_grep "--ui-help: --heat takes cache" '--heat MODE .*cache' "$TMP/help"

# ---------------------------------------------------------------- refused where the backend cannot cache
start 160 30 --demo-ui --gpu --paused --pace 0 --delay-ms 20 --gen 48 --steps 24 --block 16
wait_for settled
T send-keys -t ui k
one "--gpu: k refused with a message" status_has "cache refused: the fake-gpu backend runs no partial forward passes"
T send-keys -t ui n
if wait_for step_is 1 && header_has "cache off" && ! status_has ERROR; then ok "--gpu: the run goes on without a cache"
else fail "--gpu goes on" "$(header) | $(status_line)"; fi
quit
start 160 30 --demo-ui --gpu --cache dual --paused
one "--gpu --cache dual: the engine's refusal on screen" has "cannot start: --cache dual needs partial forward passes"
quit
if [ "$(cat "$TMP/rc" 2>/dev/null)" = 1 ]; then ok "--gpu --cache dual: exit 1 after q"; else fail "--gpu --cache exit" "$(cat "$TMP/rc" 2>/dev/null)"; fi

# ---------------------------------------------------------------- the real engine (bundled model)
if [ -f "$DEMO" ]; then
  start 160 30 -m "$DEMO" -t 1 --no-chat --cache dual --gen 48 --steps 24 --block 16 --paused --pace 0 -p "'Once upon a time'"
  wait_for settled
  one "engine: header names dual/f16 and its bytes" bash -c "tmux -u -L $SOCK capture-pane -p -t ui | sed -n 1p | grep -qE 'cache dual/f16 · [0-9.]+ (KiB|MiB)'"
  T send-keys -t ui n
  wait_for step_is 1
  read -r r n <<<"$(rows)"
  if [ -n "$n" ] && [ "$r" = "$n" ] && status_has " refresh "; then ok "engine: step 1 refreshes (rows $r/$n refresh)"; else fail "engine refresh" "$(status_line)"; fi
  T send-keys -t ui n
  wait_for step_is 2
  read -r r n <<<"$(rows)"
  if [ -n "$r" ] && [ "$r" -le 16 ] && ! status_has refresh; then ok "engine: step 2 computes the block's rows ($r/$n)"; else fail "engine partial" "$(status_line)"; fi
  T send-keys -t ui k
  one "engine: k to none" status_has "cache none: from the next step"
  T send-keys -t ui n
  if wait_for step_is 3 && header | grep -qE 'cache off · [0-9.]+ (KiB|MiB) held' && [ "$(rows)" = "$n $n" ]; then
    ok "engine: none from the next step (memory still held)"; else fail "engine none" "$(header) | $(status_line)"; fi
  quit
else
  skip "engine in the visualizer with a cache" "no $DEMO"
fi

# ---------------------------------------------------------------- unmask record draws the same
if [ -f "$DEMO" ] && command -v python3 >/dev/null 2>&1; then
    "$BIN" record -m "$DEMO" -t 1 --no-chat -p "Once upon a time" --gen 48 --steps 24 --block 16 --cache dual --heat cache \
    --size 140x30 -q --cast "$TMP/c.cast" </dev/null >"$TMP/out" 2>"$TMP/err"
  python3 tests/cli/castat.py "$TMP/c.cast" 1 >"$TMP/s1" 2>&1
  python3 tests/cli/castat.py "$TMP/c.cast" 2 >"$TMP/s2" 2>&1
  if sed -n 1p "$TMP/s1" | grep -qE 'cache dual/f16 · [0-9.]+ (KiB|MiB)'; then ok "record: the header names the cache"; else fail "record header" "$(sed -n 1p "$TMP/s1")"; fi
  if sed -n 30p "$TMP/s1" | grep -qE '  rows ([0-9]+)/\1 refresh  ' && sed -n 30p "$TMP/s2" | grep -qE '  rows [0-9]+/[0-9]+  '; then
    ok "record: the status line shows rows computed (step 1 refresh, step 2 partial)"; else fail "record status" "$(sed -n 30p "$TMP/s1") / $(sed -n 30p "$TMP/s2")"; fi
  if sed -n 29p "$TMP/s2" | grep -qF "K/V cache" && sed -n 29p "$TMP/s2" | grep -qF "stale (cached K/V)"; then ok "record: --heat cache legend"; else fail "record legend" "$(sed -n 29p "$TMP/s2")"; fi
else
  skip "record with a cache" "no $DEMO or no python3"
fi

if ls "$TMP"/tsan* >/dev/null 2>&1; then fail "ThreadSanitizer reports" "$(head -30 "$TMP"/tsan* )"; fi
finish
