#!/usr/bin/env bash
# flags.sh: the flag tables (src/app/flags.c) as a user meets them (issue 26, point 5).
#  - docs/unmask.1 lists, for every command, exactly the flags its --help prints (both come
#    from the tables: a row added, renamed or given another value name fails here until the
#    man page says the same), with the same value names;
#  - the spellings people type without thinking: --steps=32 and --steps 32, -t2 and -t 2,
#    -pTEXT, -qh clusters, -- ending the flags; each gives the same run as the long form;
#  - the shared rows: -m/--model, -M/--preset, -t/--threads, -q/--quiet, -h/--help spelled
#    the same in every command that takes them;
#  - the small things of point 7: JSON numbers as the shortest text that reads back the same,
#    no '\r' progress off a terminal (a line per step instead), eval's settings line naming only the schedule's own
#    parameters, --gen past the context refused before the model is repacked.
. "$(dirname "$0")/lib.sh"
SUITE=flags
M=models/unmask-demo.gguf
[ -f "$M" ] || { skip "flags" "models/unmask-demo.gguf missing (make demo-model)"; finish; exit 0; }

# ---------------------------------------------------------------- --help and the man page
# heads FILE: the flag heads of a --help text, one "SPELLING[ ARG]" per line (a row "-m,
# --model FILE" gives "-m FILE" and "--model FILE")
heads() { sed -n 's/^  \(-[^ ].*\)$/\1/p' "$1" | sed 's/  .*//; s/ *$//' | while IFS= read -r h; do
    local arg="" names="$h"
    case "$h" in *" "[A-Za-z]*) arg=" ${h##* }"; names="${h% *}" ;; esac
    case "$arg" in " -"*) arg=""; names="$h" ;; esac
    for n in ${names//,/ }; do echo "$n$arg"; done
  done | sort -u; }
# man_heads SECTION: the same from docs/unmask.1, the .TP heads between ".SH|.SS SECTION" and
# the next section (roff: \- is '-', quotes and font escapes dropped)
man_heads() { awk -v s="$1" '
    /^\.S[HS] / { on = ($2 == s) ; next }
    on && /^\.TP/ { getline h; print h }' docs/unmask.1 |
  sed 's/^\.B[IR]* //; s/\\-/-/g; s/\\f[BIR]//g; s/"//g; s/  */ /g; s/^ //; s/ $//' | grep '^-' |
  while IFS= read -r h; do
    local arg="" names="$h"
    case "$h" in *" "[A-Za-z]*) arg=" ${h##* }"; names="${h% *}" ;; esac
    for n in ${names//,/ }; do echo "$n$arg"; done
  done | sort -u; }

"$BIN" generate --help >"$TMP/h.generate"
# the generation rows: generate's, less its own output rows
sed -n '/^model:/,/^output:/p' "$TMP/h.generate" >"$TMP/h.gen"
heads "$TMP/h.gen" >"$TMP/gen.rows"
check_man() {  # check_man NAME SECTION HELPFILE TAKES_GEN
  local name=$1 sec=$2 hf=$3 gen=$4
  heads "$hf" >"$TMP/help.rows"
  man_heads "$sec" >"$TMP/man.rows"
  if [ "$gen" = yes ]; then sort -u "$TMP/man.rows" "$TMP/gen.rows" >"$TMP/want.rows"; else cp "$TMP/man.rows" "$TMP/want.rows"; fi
  local extra missing
  missing=$(comm -23 "$TMP/help.rows" "$TMP/want.rows" | tr '\n' ' ')
  extra=$(comm -13 "$TMP/help.rows" "$TMP/man.rows" | tr '\n' ' ')
  if [ ! -s "$TMP/help.rows" ]; then fail "man page: $name" "no flags read from its --help"
  elif [ -z "$missing$extra" ]; then ok "man page: $name lists exactly its --help flags ($(wc -l <"$TMP/help.rows") spellings)"
  else fail "man page: $name" "in --help, not in docs/unmask.1 section $sec: [$missing]; in the man page only: [$extra]"; fi
}
"$BIN" --help >"$TMP/h.main"
check_man unmask OPTIONS "$TMP/h.main" no
check_man generate generate "$TMP/h.generate" no
for c in eval record; do "$BIN" $c --help >"$TMP/h.$c"; check_man $c $c "$TMP/h.$c" yes; done
for c in info logits synth tokenize quantize split; do "$BIN" $c --help >"$TMP/h.$c"; check_man $c $c "$TMP/h.$c" no; done
"$BIN" --ui-help >"$TMP/h.view"
check_man visualizer VISUALIZER "$TMP/h.view" yes
# and the check itself must be able to fail: a man page without --steps is caught
sed 's/^\.BI \\-\\-steps " S"$/.BI \\-\\-stepz " S"/' docs/unmask.1 >"$TMP/unmask.1"
if [ "$(awk '/^\.SS generate/{on=1} on && /stepz/{print "x"; exit}' "$TMP/unmask.1")" = x ] &&
   ! (cd "$TMP" && mkdir -p docs && cp unmask.1 docs/ && man_heads generate | grep -qx -- '--steps S'); then
  ok "man page check: a renamed --steps in the man page is seen"
else fail "man page check: a renamed --steps in the man page is seen"; fi

# the --compare refusals: a generation flag is refused inside --compare exactly when the man
# page's list names it (the table's FLAG_RUN rows; a trailing --frob stops a taken one from running)
refused=$(awk '/^\.S[HS] VISUALIZER/{on=1} /^\.SS Keys/{on=0} on' docs/unmask.1 | tr '\n' ' ' |
  sed 's/.*name the prompt or the machine,//; s/are refused there.*//; s/are *$//; s/\\-/-/g; s/\\f[BIR]//g' |
  grep -oE -- '--?[a-zA-Z][a-z-]*' | sort -u)
bad=""
while read -r spell arg; do
  "$BIN" record -m "$M" -p hi --gif "$TMP/x.gif" --compare "$spell${arg:+ 1}" --frob >/dev/null 2>"$TMP/e"
  if grep -q "is not allowed there" "$TMP/e"; then got=yes; else got=no; fi
  if grep -qx -- "$spell" <<<"$refused"; then want=yes; else want=no; fi
  [ $got = $want ] || bad="$bad $spell(refused: $got, man: $want)"
done <"$TMP/gen.rows"
[ "$(echo $refused)" = "--ctx --gpu --prompt --threads -p -t" ] || bad="$bad [man list read: $(echo $refused)]"
[ -z "$bad" ] && ok "--compare refuses exactly the man page's list ($(wc -l <"$TMP/gen.rows") spellings tried)" \
  || fail "--compare refusals = the man page's list" "$bad"

# every command: -h and --help print its help (exit 0), the same text
for c in generate eval record info logits synth tokenize quantize split; do
  "$BIN" $c -h >"$TMP/a" 2>&1; r1=$?; "$BIN" $c --help >"$TMP/b" 2>&1; r2=$?
  if [ $r1 = 0 ] && [ $r2 = 0 ] && cmp -s "$TMP/a" "$TMP/b" && grep -q "^usage: unmask $c" "$TMP/a"; then ok "$c: -h = --help"
  else fail "$c: -h = --help" "exit $r1/$r2"; fi
done
expect_rc "visualizer: -h after another flag" 0 "$BIN" -p hi -h
expect_grep "visualizer: -h prints its help" "^usage: unmask \[OPTIONS\]" "$TMP/out"
# the shared rows: spelled the same wherever they appear
for c in generate eval record info logits tokenize; do
  grep -q '^  -m, --model FILE ' "$TMP/h.$c" && grep -q '^  -M, --preset NAME ' "$TMP/h.$c" &&
    ok "$c: -m, --model FILE and -M, --preset NAME" || fail "$c: -m, --model FILE and -M, --preset NAME"
done
for c in generate eval record logits quantize; do
  grep -q '^  -t, --threads N ' "$TMP/h.$c" && ok "$c: -t, --threads N" || fail "$c: -t, --threads N"
done
for c in generate eval record quantize split synth; do
  grep -q '^  -q, --quiet ' "$TMP/h.$c" && ok "$c: -q, --quiet" || fail "$c: -q, --quiet"
done
grep -qE 'LLaDA 2\.x' "$TMP/h.main" && ok "--help names LLaDA 2.x" || fail "--help names LLaDA 2.x"
grep -qE 'LLaDA 2\.x' docs/unmask.1 && ok "man page names LLaDA 2.x" || fail "man page names LLaDA 2.x"

# ---------------------------------------------------------------- spellings
GEN=(generate -m "$M" --gen 8 -q --json)
"$BIN" "${GEN[@]}" --steps 4 -t 1 -p "Once upon" >"$TMP/long.json" 2>"$TMP/err"
rc_long=$?
same_run() {  # same_run NAME ARGS...: the run's tokens equal the long spelling's
  local name=$1; shift
  "$BIN" "${GEN[@]}" "$@" >"$TMP/s.json" 2>"$TMP/err"; local rc=$?
  if [ $rc_long = 0 ] && [ $rc = 0 ] && python3 - "$TMP/long.json" "$TMP/s.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(0 if a["tokens"] == b["tokens"] and a["settings"] == b["settings"] and a["threads"] == b["threads"] else 1)
PY
  then ok "$name"; else fail "$name" "exit $rc: $(head -c 300 "$TMP/err")"; fi
}
same_run "--steps=4 -t1 -pTEXT: the same run" --steps=4 -t1 "-pOnce upon"
same_run "--threads=1 --prompt=TEXT: the same run" --steps=4 --threads=1 "--prompt=Once upon"
same_run "--threads 1 --prompt TEXT: the same run" --steps 4 --threads 1 --prompt "Once upon"
expect_rc "--gen=8 is the value 8" 0 "$BIN" generate -m "$M" --gen=8 --steps=4 -q -p hi --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["settings"]["gen"] == 8 and d["settings"]["steps_requested"] == 4 else 1)' "$TMP/out" \
  && ok "--gen=8 --steps=4 reach the settings" || fail "--gen=8 --steps=4 reach the settings"
expect_rc "-- ends the flags: what follows is an argument" 2 "$BIN" generate -m "$M" -p hi -- --gen 8
expect_grep "-- ends the flags: named" "unexpected argument '--gen'" "$TMP/err"
expect_rc "tokenize -- -x: a text starting with '-'" 0 "$BIN" tokenize -m "$M" --ids-only -- "-x"
expect_rc "tokenize -x without --: an unknown flag" 2 "$BIN" tokenize -m "$M" --ids-only "-x"
expect_rc "-qh: clustered short flags (help)" 0 "$BIN" generate -qh
expect_grep "-qh printed the help" "^usage: unmask generate" "$TMP/out"
expect_rc "--gumbel=1: a flag without a value refuses one" 2 "$BIN" generate -m "$M" -p hi --gumbel=1
expect_grep "--gumbel=1: says so" "^unmask generate: --gumbel takes no value \(given '1'\)$" "$TMP/err"
expect_rc "--steps= (empty value) is a bad number" 2 "$BIN" generate -m "$M" -p hi --steps=
expect_grep "--steps=: the number parser's message" "^unmask generate: --steps: '' is not a whole number$" "$TMP/err"
expect_rc "-t with no value" 2 "$BIN" generate -m "$M" -p hi -t
expect_grep "-t with no value: says so" "^unmask generate: -t needs a value \(N\)$" "$TMP/err"
expect_rc "--frob=2: unknown, named without its value" 2 "$BIN" generate --frob=2
expect_grep "--frob=2: message" "^unmask generate: unknown option '--frob' \(see --help\)$" "$TMP/err"
expect_rc "no abbreviations (--ste is not --steps)" 2 "$BIN" generate -m "$M" -p hi --ste 4
expect_rc "record --json is not record's" 2 "$BIN" record -m "$M" -p hi --gif "$TMP/x.gif" --json
expect_rc "quantize --threads=1 -q" 0 "$BIN" quantize --threads=1 -q "$M" "$TMP/q.gguf" Q8_0
expect_rc "synth --out= (long form of -o)" 0 "$BIN" synth -q --shape tiny-llada --out="$TMP/s.gguf"
expect_rc "info -m FILE = info FILE" 0 "$BIN" info --json -m "$M"
cp "$TMP/out" "$TMP/info_m"
"$BIN" info --json "$M" >"$TMP/info_pos" 2>/dev/null
cmp -s "$TMP/info_m" "$TMP/info_pos" && ok "info -m FILE prints what info FILE does" || fail "info -m FILE prints what info FILE does"
expect_rc "info -M demo (a preset's file)" 0 "$BIN" info -M demo
expect_grep "info -M demo: the demo model" "unmask-demo" "$TMP/out"
expect_rc "--compare '--steps=2 -t1': -t refused" 2 "$BIN" record -m "$M" -p hi --gen 8 --steps 4 -q --gif "$TMP/c.gif" --compare "--steps=2 -t1"
expect_grep "--compare -t1: refused (the machine is shared)" "^unmask record: --compare: -t is not allowed there" "$TMP/err"
expect_rc "--compare --steps=2: accepted" 0 "$BIN" record -m "$M" -p hi --gen 8 --steps 4 -q --gif "$TMP/c.gif" --compare "--steps=2"

# ---------------------------------------------------------------- the model and its preset
# ./unmask and ./unmask -m models/unmask-demo.gguf: the same settings (the preset follows the
# file, by inode: another spelling of its path too); a copy of the file is not the preset's
settings() { "$BIN" generate -q --json -p hi "$@" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["settings"], sort_keys=True))'; }
s_none=$(settings); s_m=$(settings -m "$M"); s_dot=$(settings -m "./models/../$M"); s_M=$(settings -M demo)
cp "$M" "$TMP/copy.gguf"; s_copy=$(settings -m "$TMP/copy.gguf")
[ -n "$s_none" ] && [ "$s_none" = "$s_m" ] && [ "$s_m" = "$s_dot" ] && [ "$s_m" = "$s_M" ] \
  && ok "no -m, -m FILE, -m ./models/../FILE and -M demo: the same settings" || fail "the preset follows the file" "$s_none / $s_m / $s_dot / $s_M"
python3 -c 'import json,sys; a=json.loads(sys.argv[1]); sys.exit(0 if a["gen"] == 96 and a["steps_requested"] == 48 else 1)' "$s_m" \
  && ok "-m FILE: the demo preset's gen 96, steps 48 (models.conf)" || fail "-m FILE: the demo preset's settings" "$s_m"
[ "$s_copy" != "$s_m" ] && ok "a copy of the file: the model's own defaults, not the preset's" || fail "a copy of the file" "$s_copy"
# from another directory, the build tree's binary finds models.conf and the models beside it
ABS=$(realpath "$BIN")
mkdir -p "$TMP/elsewhere"
# the build tree's binary: ./unmask, or a variant's build/<variant>/unmask (make asan, werror)
in_tree() { [ "$(dirname "$ABS")" = "$PWD" ] || [ "$(dirname "$(dirname "$ABS")")" = "$PWD/build" ]; }
if in_tree; then
  (cd "$TMP/elsewhere" && HOME="$TMP/elsewhere" XDG_CONFIG_HOME= "$ABS" generate -q --json -p hi) >"$TMP/o" 2>"$TMP/e"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["settings"]["gen"] == 96 else 1)' "$TMP/o" 2>/dev/null \
    && ok "run from another directory: the demo preset and model found beside the binary" || fail "run from another directory" "$(head -c 300 "$TMP/e")"
  (cd "$TMP/elsewhere" && HOME="$TMP/elsewhere" XDG_CONFIG_HOME= "$ABS" generate -q -M sudoku --gen 81) >"$TMP/o" 2>"$TMP/e"
  if [ -f models/unmask-sudoku.gguf ]; then
    [ -s "$TMP/o" ] && ok "run from another directory: -M sudoku found" || fail "-M sudoku from another directory" "$(cat "$TMP/e")"
  else
    grep -q "its model file .*unmask-sudoku.gguf does not exist .*docs/models.md" "$TMP/e" \
      && ok "-M sudoku, file missing: says so, points to docs/models.md" || fail "-M sudoku, file missing" "$(cat "$TMP/e")"
  fi
else skip "run from another directory" "the binary is not the build tree's ($ABS)"; fi
printf '[gone]\npath = nowhere/x.gguf\n' >"$TMP/elsewhere/models.conf"
(cd "$TMP/elsewhere" && "$ABS" generate -q -M gone -p hi) >"$TMP/o" 2>"$TMP/e"; rc=$?
[ $rc = 1 ] && grep -qF -- "-M gone: its model file ./nowhere/x.gguf does not exist (where to get it and how presets name files: docs/models.md)" "$TMP/e" \
  && ok "a preset's missing file: named, docs/models.md pointed to" || fail "a preset's missing file" "rc $rc: $(cat "$TMP/e")"
rm "$TMP/elsewhere/models.conf"
(cd "$TMP/elsewhere" && HOME="$TMP/elsewhere" XDG_CONFIG_HOME= "$ABS" generate -q -M nothing -p hi) >"$TMP/o" 2>"$TMP/e"
if in_tree; then :; else
  grep -q "no models.conf in .*docs/models.md" "$TMP/e" && ok "no models.conf: docs/models.md pointed to" || fail "no models.conf message" "$(cat "$TMP/e")"; fi

# ---------------------------------------------------------------- point 7
# JSON numbers: the shortest text that reads back as the same float (0.9, not 0.899999976)
expect_rc "generate --threshold 0.9 --json" 0 "$BIN" generate -m "$M" -p hi --gen 8 -q --threshold 0.9 --top-p 0.95 --json
expect_grep "settings: \"threshold\":0.9 exactly" '"threshold": ?0\.9[,}]' "$TMP/out"
expect_grep "settings: \"top_p\":0.95 exactly" '"top_p": ?0\.95[,}]' "$TMP/out"
# every float of the settings and the commits: the shortest text that reads back as that float32
if python3 - "$TMP/out" <<'PY'
import json, re, struct, sys
txt = open(sys.argv[1]).read()
f32 = lambda x: struct.unpack('f', struct.pack('f', x))[0]
def shortest(x):
    for p in range(1, 10):
        s = '%.*g' % (p, x)
        if f32(float(s)) == x: return s
d = json.loads(txt)
nums = [t for k, t in re.findall(r'"(\w+)": ?(-?[0-9][0-9.e+-]*)', txt) if k in d["settings"] or k == "conf"]
nums = [t for t in nums if '.' in t or 'e' in t]
bad = [t for t in nums if len(t) > len(shortest(f32(float(t))))]
sys.exit(1 if bad or not nums else 0)
PY
then ok "every float in settings and commits: the shortest text"; else fail "every float in settings and commits: the shortest text"; fi
"$BIN" info --json "$M" >"$TMP/info.json"
expect_grep "info --json: a float32 key as the shortest text (1e-05, not 9.99999975e-06)" '"attention.layer_norm_rms_epsilon": 1e-05[,}]' "$TMP/info.json"
# progress: '\r' only on a terminal (here stderr is a file)
"$BIN" generate -m "$M" -p hi --gen 16 --steps 8 >/dev/null 2>"$TMP/err"
if grep -q $'\r' "$TMP/err"; then fail "generate: no '\\r' progress off a terminal" "$(od -c "$TMP/err" | head -3)"
else ok "generate: no '\\r' progress off a terminal"; fi
expect_grep "generate: the done line still there" "^done: 8 steps" "$TMP/err"
expect_grep "generate: a whole line per step off a terminal" "^step 8/8 " "$TMP/err"
"$BIN" record -m "$M" -p hi --gen 8 --steps 4 --gif "$TMP/r.gif" >/dev/null 2>"$TMP/err"
if grep -q $'\r' "$TMP/err"; then fail "record: no '\\r' progress off a terminal"; else ok "record: no '\\r' progress off a terminal"; fi
"$BIN" synth --shape tiny-llada -o "$TMP/s2.gguf" 2>"$TMP/err"
if grep -q $'\r' "$TMP/err"; then fail "synth: no '\\r' progress off a terminal"; else ok "synth: no '\\r' progress off a terminal"; fi
if command -v script >/dev/null; then   # and on a terminal it is there
  script -qec "$BIN generate -m $M -p hi --gen 16 --steps 8 >/dev/null" /dev/null >"$TMP/tty" 2>&1 </dev/null
  grep -q $'\r''step ' "$TMP/tty" && ok "generate: '\\r' step progress on a terminal" || fail "generate: '\\r' step progress on a terminal"
else skip "generate: '\\r' step progress on a terminal" "no script(1)"; fi
# eval's settings: the schedule's own parameters only
printf '{"prompt": "a", "answer": "b"}\n' >"$TMP/t.jsonl"
expect_rc "eval (block schedule)" 0 "$BIN" eval -m "$M" "$TMP/t.jsonl" --gen 8 --steps 4 -q
expect_grep "eval settings: block schedule" "^settings: .*schedule block," "$TMP/out"
grep -qE '^settings: .*, (threshold|eps|factor|eb_gamma) ' "$TMP/out" && fail "eval settings: no other schedule's parameter" "$(grep ^settings "$TMP/out")" \
  || ok "eval settings: no other schedule's parameter"
expect_rc "eval (threshold schedule)" 0 "$BIN" eval -m "$M" "$TMP/t.jsonl" --gen 8 -q --threshold 0.8
expect_grep "eval settings: the threshold named under its schedule" "^settings: .*schedule threshold, threshold 0.8," "$TMP/out"
grep -qE '^settings: .*, (eps|factor|eb_gamma) ' "$TMP/out" && fail "eval settings (threshold): no eps, factor, eb_gamma" || ok "eval settings (threshold): no eps, factor, eb_gamma"
# --gen past the context: refused before the weights are repacked (no "repacking" line)
ctx=$("$BIN" info --json "$M" | python3 -c 'import json,sys; print(json.load(sys.stdin)["hyperparameters"]["context_length"])' 2>/dev/null)
if [ -n "$ctx" ]; then
  script_out() { if command -v script >/dev/null; then script -qec "$*" /dev/null </dev/null; else eval "$*"; fi; }
  script_out "$BIN generate -m $M -p hi --gen $((ctx + 1))" >"$TMP/big" 2>&1; rc=$?
  expect_grep "--gen past the context ($((ctx + 1)) > $ctx): refused" "$((ctx + 1)) tokens to generate exceed the model's trained context of $ctx tokens" "$TMP/big"
  grep -q "repacking" "$TMP/big" && fail "--gen past the context: before the repack" "$(tr '\r' '\n' <"$TMP/big" | head -5)" \
    || ok "--gen past the context: refused before the weights are repacked"
  expect_rc "--gen 100000: exit 1" 1 "$BIN" generate -m "$M" -p hi --gen 100000
else skip "--gen past the context" "unmask info --json gave no context_length"; fi
finish
