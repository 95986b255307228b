#!/usr/bin/env bash
# hostile_flags.sh: numeric flags, schedule flags and the context rule as a careless user
# types them (issue 14, point 5). Every numeric flag of every command goes through one
# parser (src/base/numparse.c): each bad spelling must exit 2 (bad usage) with exactly
# "unmask CMD: FLAG: 'VALUE' is not a whole number" (or "is not a number", "is out of
# range (LO to HI)"), write nothing and leave the input model's bytes as they were.
# Expected numbers come from the model file (unmask info), the schedule's formula or the
# JSON's own step list, never from the code under test.
. "$(dirname "$0")/lib.sh"
SUITE=hostile_flags

M=$TMP/m.gguf                                   # a private copy: its bytes are checked at the end
cp models/unmask-demo.gguf "$M" || { fail "copy the bundled model" "models/unmask-demo.gguf missing"; finish; exit 0; }
M_SHA=$(sha256sum <"$M")
OUT=$TMP/out.d; mkdir -p "$OUT"                 # every output flag points in here: must stay empty

# commands as "PROG|ARGS": PROG is the message prefix, ARGS make the command valid but for the flag
GEN="unmask generate|generate -m $M -p hi --gen 8 --steps 4 -q"
REC="unmask record|record -m $M -p hi --gen 8 --steps 4 -q --gif $OUT/r.gif"
VIS="unmask|-m $M -p hi"
LOG="unmask logits|logits -m $M --tokens 1,2 --out $OUT/l.f32"
SYN="unmask synth|synth --shape tiny-llada -o $OUT/s.gguf"
QUA="unmask quantize|quantize $M $OUT/q.gguf Q8_0"

# (command, flag) pairs with the kind of number each takes
INT_FLAGS=()
for c in GEN REC VIS; do for f in -t --ctx --gen --steps --block --top-k --seed; do INT_FLAGS+=("$c $f"); done; done
INT_FLAGS+=("REC --delay-cs" "REC --hold-cs" "VIS --delay-ms" "LOG -t" "LOG --reps" "SYN --seed" "QUA -t" "QUA --threads")
FLOAT_FLAGS=()
for c in GEN REC VIS; do for f in --eps --threshold --alg-temp --temp --top-p --cfg; do FLOAT_FLAGS+=("$c $f"); done; done
FLOAT_FLAGS+=("SYN --scale")

BAD_INT=(nan inf -inf '' 12.7 0x10 1e3 ' 5' '5 ' 5x 010 1_000 '+-5')
BAD_FLOAT=(nan NaN inf -inf infinity '' ' 5' '5 ' 5x 0x1p3 0x10 1e 1,5 '.')

# run_flag KIND CMDVAR FLAG VALUE...: each value must give exit 2 and exactly the message
run_flag() {
  local kind=$1 cvar=$2 flag=$3; shift 3
  local spec=${!cvar} prog args v bad=""
  prog=${spec%%|*}; args=${spec#*|}
  for v in "$@"; do
    # shellcheck disable=SC2086
    "$BIN" $args "$flag" "$v" >"$TMP/o" 2>"$TMP/e"; local rc=$?
    local want="$prog: $flag: '$v' is not a $kind"
    if [ $rc != 2 ] || [ "$(cat "$TMP/e")" != "$want" ]; then bad="$bad [$v: rc $rc, $(head -c 160 "$TMP/e")]"; fi
  done
  if [ -z "$bad" ]; then ok "$prog $flag: $# bad spellings refused (exit 2, one message)"
  else fail "$prog $flag: bad spellings" "$bad"; fi
}
for p in "${INT_FLAGS[@]}"; do run_flag "whole number" ${p% *} "${p#* }" "${BAD_INT[@]}"; done
for p in "${FLOAT_FLAGS[@]}"; do run_flag "number" ${p% *} "${p#* }" "${BAD_FLOAT[@]}"; done

# out of range: the range in plain numbers (no exponent), for each command that takes the flag
range_case() {  # range_case CMDVAR FLAG VALUE "LO to HI..."
  local spec=${!1} prog args
  prog=${spec%%|*}; args=${spec#*|}
  # shellcheck disable=SC2086
  "$BIN" $args "$2" "$3" >"$TMP/o" 2>"$TMP/e"; local rc=$?
  local want="$prog: $2: '$3' is out of range ($4)"
  if [ $rc = 2 ] && [ "$(cat "$TMP/e")" = "$want" ]; then ok "$prog $2 $3: out of range ($4)"
  else fail "$prog $2 $3: out of range" "rc $rc: $(head -c 200 "$TMP/e") (wanted: $want)"; fi
}
for c in GEN REC VIS; do
  range_case $c --steps 0 "1 to 1048576"
  range_case $c --gen 1048577 "1 to 1048576"
  range_case $c -t 0 "1 to 1024"
  range_case $c --ctx 0 "1 to 16777216"
  range_case $c --seed -1 "0 to 9007199254740991"
  range_case $c --seed 99999999999999999999 "0 to 9007199254740991"
  range_case $c --eps 1 "0 to 1, 1 excluded"
  range_case $c --top-p 0 "0 to 1, 0 excluded"
  range_case $c --temp 1e999 "0 to 100"
  range_case $c --threshold -0.5 "0 to 1"
done
range_case REC --delay-cs 1 "2 to 65535"
range_case VIS --delay-ms -1 "0 to 600000"
range_case LOG --reps 0 "1 to 1024"
range_case LOG --reps 1025 "1 to 1024"
range_case SYN --scale 0 "0 to 1000, 0 excluded"
range_case SYN --scale -1 "0 to 1000, 0 excluded"
range_case QUA -t 1025 "1 to 1024"

# --eps nan must fail, not quietly switch to the timestep schedule with the default eps
expect_rc "--eps nan: exit 2" 2 "$BIN" generate -m "$M" -p hi --gen 8 --eps nan --json -q
if [ ! -s "$TMP/out" ]; then ok "--eps nan: nothing generated"; else fail "--eps nan: nothing generated" "$(head -c 200 "$TMP/out")"; fi
# synth --scale nan would write a model whose logits are all NaN
expect_rc "synth --scale nan: exit 2" 2 "$BIN" synth --shape tiny-llada --scale nan -o "$OUT/nan.gguf"
# logits --tokens: each id is a whole number
expect_rc "logits --tokens 1,0x2: exit 2" 2 "$BIN" logits -m "$M" --tokens 1,0x2 --out "$OUT/l.f32"
expect_grep "logits --tokens 1,0x2: names the item" "^unmask logits: --tokens: item 2: '0x2' is not a whole number$" "$TMP/err"
expect_rc "logits --tokens '1, 2': exit 2" 2 "$BIN" logits -m "$M" --tokens "1, 2" --out "$OUT/l.f32"
expect_rc "logits --tokens 1,,2: exit 2" 2 "$BIN" logits -m "$M" --tokens 1,,2 --out "$OUT/l.f32"
# record --size: two whole numbers
expect_rc "record --size 1e2x30: exit 2" 2 "$BIN" record -m "$M" -p hi --gif "$OUT/r.gif" --size 1e2x30
expect_grep "record --size 1e2x30: message" "^unmask record: --size: '1e2x30' is not COLSxROWS" "$TMP/err"
expect_rc "record --size 10x5: exit 2" 2 "$BIN" record -m "$M" -p hi --gif "$OUT/r.gif" --size 10x5
expect_grep "record --size 10x5: the range" "^unmask record: --size: '10x5' is out of range \(60x16 to 500x200\)$" "$TMP/err"

# ---------------------------------------------------------------- schedule flags
conflict() {  # conflict "FLAGS" "F1 and F2 choose different schedules (S1, S2)"
  # shellcheck disable=SC2086
  "$BIN" generate -m "$M" -p hi --gen 8 -q $1 >"$TMP/o" 2>"$TMP/e"; local rc=$?
  local want="unmask generate: $2; give one"
  if [ $rc = 2 ] && [ "$(cat "$TMP/e")" = "$want" ]; then ok "conflict: $1"
  else fail "conflict: $1" "rc $rc: $(head -c 200 "$TMP/e") (wanted: $want)"; fi
}
conflict "--threshold 0.5 --eps 0.1" "--threshold and --eps choose different schedules (threshold, timestep)"
conflict "--eps 0.1 --threshold 0.5" "--eps and --threshold choose different schedules (timestep, threshold)"
conflict "--schedule block --eps 0.1" "--schedule block and --eps choose different schedules (block, timestep)"
conflict "--eps 0.1 --schedule linear" "--eps and --schedule linear choose different schedules (timestep, linear)"
conflict "--schedule timestep --threshold 0.5" "--schedule timestep and --threshold choose different schedules (timestep, threshold)"
conflict "--threshold 0.5 --block 4 --schedule block" "--threshold and --schedule block choose different schedules (threshold, block)"

# consistent combinations run, and give the same run whatever the order (the last flag no longer wins)
settings() {  # settings FLAGS...: "schedule block eps threshold" and the tokens of a --json run
  "$BIN" generate -m "$M" -p "Once upon a time" --gen 16 --steps 8 --json -q "$@" 2>"$TMP/e" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); s=d["settings"]; print(s["schedule"], s["block"], round(s["eps"], 6), round(s["threshold"], 6), d["tokens"])'
}
consistent() {  # consistent "WANT" FLAGS... / reversed FLAGS
  local want=$1 a b; shift
  a=$(settings "$@"); b=$(settings "${@:3}" "${@:1:2}")
  if [ "${a%% \[*}" = "$want" ] && [ "$a" = "$b" ]; then ok "consistent: $* -> $want, either order"
  else fail "consistent: $*" "got '$a' / reversed '$b', wanted '$want ...'; $(head -c 200 "$TMP/e")"; fi
}
consistent "threshold 4 0.001 0.5" --threshold 0.5 --block 4
consistent "timestep 8 0.01 0.9" --eps 0.01 --block 8
consistent "block 8 0.001 0.9" --schedule block --block 8
consistent "timestep 0 0.01 0.9" --schedule timestep --eps 0.01
consistent "threshold 16 0.001 0.7" --schedule threshold --threshold 0.7   # block 32 kept <= --gen 16

# ---------------------------------------------------------------- --json: the steps that ran
# threshold schedule: ends when every position is committed, usually well before --steps
"$BIN" generate -m "$M" -p "Once upon a time" --gen 64 --steps 64 --threshold 0.3 --json -q >"$TMP/j" 2>"$TMP/e"
if python3 - "$TMP/j" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
steps = d["steps"]
ran = len(steps)
assert d["steps_run"] == ran, (d["steps_run"], ran)
assert [s["step"] for s in steps] == list(range(1, ran + 1))
assert sum(len(s["commits"]) for s in steps) == 64          # every generated position, once
assert d["settings"]["steps_requested"] == 64 and ran < 64, ran
assert "steps" not in d["settings"]
PY
then ok "--json threshold: steps_run == len(steps) < steps_requested"; else fail "--json threshold steps" "$(head -c 300 "$TMP/e")"; fi
# timestep schedule with more steps than tokens: every step is listed (many commit nothing),
# and the commit counts are Dream's floor(R (1 - s/t)) computed here from the formula
"$BIN" generate -m "$M" -p "Once upon a time" --gen 4 --steps 40 --eps 0.001 --json -q >"$TMP/j" 2>"$TMP/e"
if python3 - "$TMP/j" <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
S, eps, R, want = 40, 0.001, 4, []
for k in range(S):
    if R == 0: break
    t = 1 - k / S * (1 - eps); s = 1 - (k + 1) / S * (1 - eps)
    n = R if k == S - 1 else min(R, math.floor(R * (1 - s / t)))
    want.append(n); R -= n
got = [len(s["commits"]) for s in d["steps"]]
assert got == want, (got, want)
assert d["steps_run"] == len(want) > 4 + 2, d["steps_run"]      # past the old cap of gen + 2 entries
PY
then ok "--json timestep, 40 steps for 4 tokens: every step listed, counts match the formula"
else fail "--json timestep steps" "$(head -c 300 "$TMP/e")"; fi

# ---------------------------------------------------------------- context rule
CTX=$("$BIN" info --json "$M" | python3 -c 'import json,sys; print(json.load(sys.stdin)["hyperparameters"]["context_length"])')
# (a --gen past the context alone is refused before the model is repacked: tests/cli/flags.sh;
# here the prompt is what tips it over)
expect_rc "--gen past the trained context: exit 1" 1 "$BIN" generate -m "$M" -p "Once upon a time" --gen $((CTX - 2)) --steps 4 -q
if [ "$(wc -l <"$TMP/err")" = 1 ] && grep -qE "^unmask generate: prompt of [0-9]+ tokens \+ $((CTX - 2)) to generate = [0-9]+ exceeds the model's trained context of $CTX tokens \(--ctx N allows more, with a warning\)$" "$TMP/err"
then ok "--gen past the trained context: one line naming $CTX"; else fail "context error message" "$(cat "$TMP/err")"; fi
expect_rc "--ctx 100000 --gen 300: runs" 0 "$BIN" generate -m "$M" -p "Once upon a time" --ctx 100000 --gen 300 --steps 4 -q
expect_grep "--ctx 100000 --gen 300: warns" "^unmask generate: warning: prompt of [0-9]+ tokens \+ 300 to generate = [0-9]+ exceeds the model's trained context of $CTX tokens" "$TMP/err"
if [ -s "$TMP/out" ]; then ok "--ctx 100000 --gen 300: an answer"; else fail "--ctx 100000 --gen 300: an answer" "empty stdout"; fi
expect_rc "--gen inside the context, --ctx given: no warning" 0 "$BIN" generate -m "$M" -p hi --ctx 100000 --gen 16 --steps 4 -q
if [ ! -s "$TMP/err" ]; then ok "no warning inside the trained context"; else fail "no warning inside the context" "$(cat "$TMP/err")"; fi
expect_rc "--ctx 200 --gen 198: exit 1" 1 "$BIN" generate -m "$M" -p "Once upon a time" --ctx 200 --gen 198 --steps 4 -q
expect_grep "--ctx 200 --gen 198: names the limit" "exceeds the context of 200 tokens set by --ctx$" "$TMP/err"
expect_rc "record past the trained context: exit 1" 1 "$BIN" record -m "$M" -p "Once upon a time" --gen $((CTX - 2)) --steps 4 -q --gif "$OUT/r.gif"
expect_grep "record past the trained context: message" "^unmask record: prompt of [0-9]+ tokens \+ $((CTX - 2)) to generate = [0-9]+ exceeds the model's trained context of $CTX tokens" "$TMP/err"
expect_rc "record --ctx 100000 --gen 300: runs" 0 "$BIN" record -m "$M" -p hi --ctx 100000 --gen 300 --steps 2 -q --gif "$TMP/ctx.gif"
expect_grep "record --ctx 100000: warns" "^unmask record: warning: .* exceeds the model's trained context of $CTX tokens" "$TMP/err"

# the visualizer: the warning on screen, and on stderr after quitting (needs tmux for a terminal)
if command -v tmux >/dev/null 2>&1; then
  SOCK=unmask-hf-$$
  printf 'set -g remain-on-exit on\nset -g status off\n' >"$TMP/tmux.conf"
  T() { tmux -u -L "$SOCK" -f "$TMP/tmux.conf" "$@"; }
  trap 'T kill-server 2>/dev/null; rm -rf "$TMP"' EXIT
  T new-session -d -s ui -x 120 -y 30 "env LANG=C.UTF-8 LC_ALL=C.UTF-8 $BIN -m $M -p hi --ctx 100000 --gen 300 --steps 2 -t 1 --paused; echo rc=\$?"
  seen=0
  for ((i = 0; i < 100; i++)); do T capture-pane -p -t ui | grep -q "warning: prompt of" && { seen=1; break; }; sleep 0.1; done
  if [ $seen = 1 ]; then ok "visualizer --ctx 100000 --gen 300: warning on screen"
  else fail "visualizer: warning on screen" "$(T capture-pane -p -t ui | tail -3)"; fi
  T send-keys -t ui q
  for ((i = 0; i < 100; i++)); do T capture-pane -p -t ui | grep -q '^rc=' && break; sleep 0.1; done
  if T capture-pane -p -J -t ui | grep -q "^unmask: warning: prompt of .* exceeds the model's trained context of $CTX tokens" \
     && T capture-pane -p -t ui | grep -q '^rc=0'; then ok "visualizer: warning on stderr after quitting, exit 0"
  else fail "visualizer: warning after quitting" "$(T capture-pane -p -J -t ui | grep -v '^$' | tail -4)"; fi
  T kill-server 2>/dev/null
else
  skip "visualizer context warning" "tmux not installed"
fi

# ---------------------------------------------------------------- models.conf numbers
mkdir -p "$TMP/conf"
cp "$M" "$TMP/conf/m.gguf"
conf_case() {  # conf_case KEY VALUE MESSAGE-TAIL
  printf '[p]\npath = m.gguf\n%s = %s\n' "$1" "$2" >"$TMP/conf/models.conf"
  (cd "$TMP/conf" && XDG_CONFIG_HOME=$TMP/conf/none "$BIN" generate -M p -p hi -q >"$TMP/o" 2>"$TMP/e"); local rc=$?
  local want="unmask generate: -M p: models.conf:3: $1: '$2' $3"
  if [ $rc = 1 ] && [ "$(cat "$TMP/e")" = "$want" ]; then ok "models.conf $1 = $2: refused with file:line"
  else fail "models.conf $1 = $2" "rc $rc: $(cat "$TMP/e") (wanted: $want)"; fi
}
conf_case gen 12.7 "is not a whole number"
conf_case steps 0x10 "is not a whole number"
conf_case block 010 "is not a whole number"
conf_case gen 0 "is out of range (1 to 1048576)"
conf_case temperature nan "is not a number"
conf_case temperature inf "is not a number"
conf_case temperature 101 "is out of range (0 to 100)"

# models.conf that is not a regular file: an error naming it, not "no models.conf found" (exit 0)
conf_special() {  # conf_special WHAT KIND
  for cmd in "--list-models" "generate -M p -p hi -q"; do
    # shellcheck disable=SC2086
    (cd "$TMP/conf" && XDG_CONFIG_HOME=$TMP/conf/none "$BIN" $cmd >"$TMP/o" 2>"$TMP/e"); local rc=$?
    if [ $rc = 1 ] && grep -qE "models\.conf: not a regular file \($2\)\$" "$TMP/e"; then ok "models.conf a $1: $cmd says so"
    else fail "models.conf a $1: $cmd" "rc $rc: $(cat "$TMP/e" "$TMP/o")"; fi
  done
}
rm -f "$TMP/conf/models.conf"; mkfifo "$TMP/conf/models.conf"; conf_special FIFO "a FIFO"
rm -f "$TMP/conf/models.conf"; mkdir "$TMP/conf/models.conf"; conf_special directory "a directory"
rmdir "$TMP/conf/models.conf"

# --compare with an unterminated quote: the value shown as given (it used to read '--seed 22')
for q in '"--seed 2' "--seed '2" '--seed 2 --temp"0.5'; do
  want=$(printf '%s' "$q" | sed -E 's/^(.*[ ]|)([^ ]*["'"'"'].*)$/\2/')
  "$BIN" record -m "$M" -p hi --gif "$OUT/c.gif" --compare "$q" >"$TMP/o" 2>"$TMP/e"; rc=$?
  if [ $rc = 2 ] && grep -qxF "unmask record: --compare: unterminated ${q//[^\"\']/} in '$want'" "$TMP/e"; then
    ok "--compare '$q': unterminated quote, shown as given"
  else fail "--compare '$q'" "rc $rc: $(cat "$TMP/e") (wanted the text '$want')"; fi
done

# ---------------------------------------------------------------- nothing written, input untouched
if [ "$(sha256sum <"$M")" = "$M_SHA" ]; then ok "the input model's bytes are unchanged"; else fail "input model changed" ""; fi
if [ -z "$(ls -A "$OUT")" ]; then ok "no output file written by a refused command"; else fail "outputs written" "$(ls -A "$OUT")"; fi
finish
