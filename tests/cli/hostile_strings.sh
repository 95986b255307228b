#!/usr/bin/env bash
# hostile_strings.sh: strings from files never reach a terminal raw (issue 25, point 4). Two
# GGUF files made from the tiny model by tests/cli/gguf_edit.py:
#   every.gguf  every string key and every string array element holds terminal escapes (OSC
#               title, alternate screen, charset, C1 CSI, BEL, a lone 0x9b): not runnable, so
#               it reaches users through info and through error messages;
#   runs.gguf   the same in general.name, general.description and the chat template, and in
#               most token pieces (GPT-2 byte-level text, so they decode to real ESC bytes),
#               while it stays runnable: generated text, the visualizer's header and canvas,
#               recordings.
# plus a task file and a models.conf holding the same bytes. Checks: text output through
# pipes holds no control character but '\n' (rawcheck, an independent UTF-8 and control scan),
# JSON holds them only as \u escapes, asciicast events hold only the recorder's own CSI
# sequences, and on a real terminal (tmux) the pane's title and screen mode never change.
SUITE=hostile_strings
. "$(dirname "$0")/lib.sh"
ROOT=${UNMASK_ROOT:-$PWD}
tiny=$ROOT/tests/data/tiny-llada.gguf
EVIL='\x1b]0;PWNED\x07\x1b[?1049h\x1b(0\xc2\x9b31m\x9b\x1bc'

python3 - "$tiny" "$TMP" "$ROOT/tests/cli" "$EVIL" <<'PY'
import ast, sys
sys.path.insert(0, sys.argv[3])
import gguf_edit as ge
src, out = sys.argv[1], sys.argv[2]
evil = ast.literal_eval("b'" + sys.argv[4] + "'")
g = ge.load(src)                                   # every string
for kv in g.kv:
    if kv[1] == 8: kv[2] = evil
    elif kv[1] == 9 and kv[2][0] == 8: kv[2] = (8, [evil + b"%d" % i for i in range(len(kv[2][1]))])
g.write(out + "/every.gguf")
g = ge.load(src)                                   # runnable: free text and most pieces
for key in (b"general.name", b"general.description", b"tokenizer.chat_template"):
    g.set(key, 8, evil)
# user-defined tokens (type 4: matched as they are in the text, decoded as they are) holding
# the raw bytes; the rest of the vocabulary (a-i n r t, space, merges, specials) stays
et, toks = g.get(b"tokenizer.ggml.tokens")
_, types = g.get(b"tokenizer.ggml.token_type")
keep = set(range(65, 74)) | {78, 82, 84, 0} | set(range(95, 103))
toks = [t if i in keep else evil + b"%d" % i for i, t in enumerate(toks)]
types = [t if i in keep else 4 for i, t in enumerate(types)]
g.set(b"tokenizer.ggml.tokens", 9, (et, toks))
g.set(b"tokenizer.ggml.token_type", 9, (5, types))
open(out + "/piece.txt", "wb").write(b"hi " + evil + b"33 hi")
g.write(out + "/runs.gguf")
open(out + "/tasks.jsonl", "w").write('{"prompt": "hi \\u001b]0;PWNED\\u0007 \\u009b2J", "answer": "\\u001b[?1049h"}\n')
open(out + "/models.conf", "wb").write(b"[p]\npath = /x/" + evil + b".gguf\nprompt = " + evil + b"\n")
PY

# rawcheck FILE: no control character but '\n' and '\t' (C0, DEL, C1), nothing that is not UTF-8
rawcheck() { python3 - "$1" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
try: s = b.decode("utf-8")
except UnicodeDecodeError as x: sys.exit("not UTF-8 at byte %d" % x.start)
bad = [i for i, c in enumerate(s) if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f]
if bad: sys.exit("control U+%04X at character %d: %r" % (ord(s[bad[0]]), bad[0], s[max(0, bad[0] - 20):bad[0] + 20]))
PY
}
# clean NAME FILE [RC WANT]: FILE passes rawcheck
clean() { local why; if why=$(rawcheck "$2" 2>&1); then ok "$1: no raw control"; else fail "$1: raw control in output" "$why"; fi; }
# run NAME WANT_RC CMD...: run with stdout and stderr kept; exit status checked, both streams clean
run() { local name=$1 want=$2; shift 2
  "$@" >"$TMP/o" 2>"$TMP/e" </dev/null; local rc=$?
  if [ $rc = "$want" ]; then ok "$name: exit $rc"; else fail "$name: exit $rc, wanted $want" "$(head -c 300 "$TMP/e" | cat -v)"; fi
  clean "$name (stdout)" "$TMP/o"; clean "$name (stderr)" "$TMP/e"; }

A=$TMP/every.gguf R=$TMP/runs.gguf
run "info, every string hostile" 0 "$BIN" info "$A"
expect_grep "info: the heading escapes the architecture" '^hyper-parameters \(\\x1b\]0;PWNED\\x07' "$TMP/o"
expect_grep "info: runnable no, reason escaped" "^runnable: no: unknown architecture '\\\\x1b\]0;PWNED" "$TMP/o"
run "info --json, every string hostile" 0 "$BIN" info --json "$A"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["architecture"].startswith("\x1b]0;PWNED\x07"), d["architecture"]' "$TMP/o"
then ok "info --json: the value itself, JSON-escaped"; else fail "info --json value" "$(head -c 300 "$TMP/o")"; fi
run "generate -m every" 1 "$BIN" generate -m "$A" -p hi -q
run "tokenize -m every" 1 "$BIN" tokenize -m "$A" hi
run "logits -m every" 1 "$BIN" logits -m "$A" --tokens 1 --out "$TMP/l.f32"
run "record -m every" 1 "$BIN" record -m "$A" -p hi -q --gif "$TMP/r.gif"
run "quantize every" 1 "$BIN" quantize -q "$A" "$TMP/q.gguf" Q8_0
run "split --dry-run every" 0 "$BIN" split --dry-run "$A" "$TMP/sp"
run "visualizer -m every (before the terminal)" 1 "$BIN" -m "$A"

run "info, runnable hostile" 0 "$BIN" info "$R"
expect_grep "runs.gguf runs" '^runnable: yes$' "$TMP/o"
run "tokenize -m runs: pieces escaped" 0 "$BIN" tokenize -m "$R" -f "$TMP/piece.txt"
expect_grep "tokenize: an escaped piece" "\\\\x1b\]0;PWNED\\\\x07" "$TMP/o"
"$BIN" generate -m "$R" -p hi --gen 24 --steps 8 --no-chat 2>&1 >/dev/null | tr -d '\r' >"$TMP/e"
clean "generate's stderr (the model's name; progress \\r dropped)" "$TMP/e"
expect_grep "generate: the model line escapes general.name" '^model: \\x1b\]0;PWNED' "$TMP/e"
run "generate --json" 0 "$BIN" generate -m "$R" -p hi --gen 24 --steps 8 --no-chat -q --json
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "\x1b" in d["model"] and "\x1b" in d["answer"], d["answer"]' "$TMP/o"
then ok "generate --json: name and answer carry the bytes, JSON-escaped"; else fail "generate --json values" "$(head -c 300 "$TMP/o")"; fi
run "generate --stream-json" 0 "$BIN" generate -m "$R" -p hi --gen 24 --steps 8 --no-chat -q --stream-json
"$BIN" generate -m "$R" -p hi --gen 24 --steps 8 --no-chat -q >"$TMP/raw.txt"
if grep -q $'\x1b' "$TMP/raw.txt"; then ok "generate into a pipe: the answer's exact bytes (hostile pieces were generated)"
else fail "generate into a pipe: no ESC in the answer: the test's model did not generate a hostile piece" "$(cat -v "$TMP/raw.txt")"; fi
run "eval over a hostile task file" 0 "$BIN" eval -m "$R" "$TMP/tasks.jsonl" --gen 8 --steps 4 --no-chat -q
run "eval --json" 0 "$BIN" eval -m "$R" "$TMP/tasks.jsonl" --gen 8 --steps 4 --no-chat -q --json
(cd "$TMP" && run "--list-models over a hostile models.conf" 0 "$BIN" --list-models)
expect_grep "--list-models: the path escaped" '^  p +MISSING +/x/\\x1b\]0;PWNED' "$TMP/o"
(cd "$TMP" && run "-M with a hostile path" 1 "$BIN" generate -M p -q)
(cd "$TMP" && run "-M with a hostile prompt (record)" 1 "$BIN" record -M p -q --cast "$TMP/p.cast")

# the recording: the cast's own CSI sequences only (no OSC, no BEL, no charset, no C1), the
# hostile pieces drawn as control pictures (U+241B for ESC)
run "record --cast" 0 "$BIN" record -m "$R" -p hi --gen 24 --steps 8 --no-chat -q --gif "$TMP/r.gif" --cast "$TMP/r.cast"
if python3 - "$TMP/r.cast" <<'PY'
import json, re, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
head = json.loads(lines[0]); data = ""
for ev in map(json.loads, lines[1:]):
    if ev[1] == "o": data += ev[2]
rest = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", data)           # the recorder's CSI sequences
bad = [c for c in rest if ord(c) < 0x20 and c not in "\r\n" or 0x7f <= ord(c) <= 0x9f]
assert not bad, "control U+%04X left in the events" % ord(bad[0])
assert "\x1b[?1049h" not in data and "\x1b]" not in data and "\x1b(" not in data, "a hostile sequence in the events"
assert "\u241b" in data, "no control picture: the hostile pieces were not drawn"
assert all(ord(c) >= 0x20 for c in head.get("title", "")), "control in the title"
PY
then ok "record --cast: only the recorder's own sequences, hostile pieces as pictures"; else fail "record --cast events" ""; fi

# on a real terminal: generate's answer, the visualizer's header and canvas
. "$(dirname "$0")/tmuxlib.sh"
tmux_begin strings hostile-strings-on-a-terminal
pane_state() { T display -p -t ui '#{pane_title}|#{alternate_on}'; }
T new-session -d -s ui -x 100 -y 30 "printf '\\033]0;clean\\007'; $RUN $BIN generate -m $R -p hi --gen 24 --steps 8 --no-chat -q; echo rc=\$?; sleep 30"
if wait_for sh -c "T() { tmux -u -L $SOCK -f $TMP/tmux.conf \"\$@\"; }; T capture-pane -p -t ui | grep -q rc="; then
  cap >"$TMP/screen"
  if grep -q 'rc=0' "$TMP/screen" && grep -qF '\x1b]0;PWNED\x07' "$TMP/screen"; then ok "generate on a terminal: the answer escaped"
  else fail "generate on a terminal" "$(cat "$TMP/screen")"; fi
  if [ "$(pane_state)" = "clean|0" ]; then ok "generate on a terminal: title and screen mode unchanged"
  else fail "generate changed the terminal" "$(pane_state)"; fi
else fail "generate on a terminal: did not finish" "$(cap)"; fi
T kill-session -t ui
T new-session -d -s ui -x 100 -y 30 "printf '\\033]0;clean\\007'; $RUN $BIN -m $R -p hi --gen 24 --steps 8 --no-chat --paused; echo rc=\$? >$TMP/vrc; sleep 30"
if wait_for sh -c "tmux -u -L $SOCK -f $TMP/tmux.conf capture-pane -p -t ui | grep -q 'PAUSED'"; then
  T send-keys -t ui n; sleep 0.5; T send-keys -t ui n n n; sleep 1
  cap >"$TMP/screen"
  if grep -q $'\u241b' "$TMP/screen" || grep -q '␛' "$TMP/screen"; then ok "visualizer: hostile text drawn as control pictures"
  else fail "visualizer: no control picture on screen" "$(cat "$TMP/screen")"; fi
  if [ "$(pane_state | cut -d'|' -f1)" = clean ]; then ok "visualizer: the pane title never changed"; else fail "visualizer title" "$(pane_state)"; fi
  T send-keys -t ui q
  if wait_for test -s "$TMP/vrc" && [ "$(cat "$TMP/vrc")" = "rc=0" ] && [ "$(pane_state)" = "clean|0" ]; then
    ok "visualizer: exits 0, title and screen mode as before"
  else fail "visualizer exit" "$(cat "$TMP/vrc" 2>/dev/null) $(pane_state)"; fi
else fail "visualizer did not start" "$(cap)"; fi
finish
