#!/usr/bin/env bash
# edit.sh: LLaDA 2.x block diffusion and LLaDA 2.1 token editing on the bundled model.
# generate --json lists each step's edits (old and new token) apart from its commits; post
# steps commit nothing; an edit threshold that can never be passed leaves the tokens of a run
# without editing; blocks commit in order; --stream-json carries the edits; bad values are
# refused. Then the visualizer (tmux) and `unmask record` (asciicast) show the step's edits
# in the status line and the legend, and the edited cell in the theme's edited colours.
SUITE=edit
. "$(dirname "$0")/lib.sh"

ROOT=${UNMASK_ROOT:-$PWD}
DEMO=$ROOT/models/unmask-demo.gguf
if [ ! -f "$DEMO" ] || ! command -v python3 >/dev/null 2>&1; then
  skip edit "no $DEMO or no python3"; finish; exit 0
fi
ARGS=(-m "$DEMO" -t 1 --no-chat -p "The cat" --gen 24 --threshold 0.5 --block 8)

# ---------------------------------------------------------------- JSON: edits and post steps
expect_rc "generate --json with editing" 0 "$BIN" generate "${ARGS[@]}" --edit-threshold 0.3 --post-steps 4 --json -q
cp "$TMP/out" "$TMP/edit.json"
if python3 - "$TMP/edit.json" >"$TMP/py" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); s = d["settings"]; npr = d["n_prompt"]; B = 8
assert s["edit"] and abs(s["edit_threshold"] - 0.3) < 1e-6 and s["post_steps"] == 4, s
toks = {}                                         # position -> token as the steps go
edits = posts = 0; run = 0
for st in d["steps"]:
    committed = {c["pos"] for c in st["commits"]}
    for ed in st["edits"]:
        p = ed["pos"]
        assert p in toks, "edit of a position not committed before: %r" % ed
        assert ed["from"] == toks[p] and ed["token"] != ed["from"] and ed["conf"] > 0.3, ed
        assert p not in committed, "an edit listed as a commit: %r" % ed
        assert (p - npr) // B == st["block"], "edit outside the active block: %r" % ed
        toks[p] = ed["token"]; edits += 1
    for c in st["commits"]: toks[c["pos"]] = c["token"]
    if st["post_step"]:
        assert not st["commits"], "a post step committed: %r" % st
        run += 1; posts += 1
        assert run <= 4
    else: run = 0
final = d["tokens"][npr:]
assert all(final[p - npr] == t for p, t in toks.items()), "JSON steps disagree with the tokens"
assert edits > 0 and posts >= 3, (edits, posts)
print(edits, posts)
PY
then ok "json: edits replace committed tokens of the active block, post steps commit nothing ($(cat "$TMP/py"))"
else fail "json edits" "$(tail -3 "$TMP/py")"; fi

# an edit threshold nothing can pass: the tokens of a run without editing, one post step a block
"$BIN" generate "${ARGS[@]}" --json -q >"$TMP/off.json" 2>"$TMP/err"
"$BIN" generate "${ARGS[@]}" --edit-threshold 1 --json -q >"$TMP/never.json" 2>>"$TMP/err"
if python3 - "$TMP/off.json" "$TMP/never.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["tokens"] == b["tokens"]
assert not any(st["edits"] or st["post_step"] for st in a["steps"])
assert not any(st["edits"] for st in b["steps"])
assert b["steps_run"] == a["steps_run"] + 3 and sum(st["post_step"] for st in b["steps"]) == 3
PY
then ok "json: no editing and an unreachable edit threshold give the same tokens"
else fail "edit off vs never" "$(head -c 300 "$TMP/err")"; fi

# blocks commit in order: no position of block b+1 commits while block b holds a mask
"$BIN" generate "${ARGS[@]}" --block-steps 4 --json -q >"$TMP/order.json" 2>"$TMP/err"
if python3 - "$TMP/order.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); npr = d["n_prompt"]; n = len(d["tokens"]) - npr; B = 8
assert d["settings"]["block_steps"] == 4 and d["settings"]["schedule"] == "threshold"
masked = set(range(npr, npr + n))
for st in d["steps"]:
    bl = {(c["pos"] - npr) // B for c in st["commits"]}
    assert len(bl) == 1, st
    b = bl.pop()
    assert not any((p - npr) // B < b for p in masked), "block %d commits before an earlier one is full" % b
    left = sum(1 for p in masked if (p - npr) // B == b)
    assert len(st["commits"]) >= min(2, left), "quota 8/4 = 2 not met: %r" % st   # LLaDA 2.0's quota
    masked -= {c["pos"] for c in st["commits"]}
assert not masked
PY
then ok "json: blocks commit in order, at least the quota each step"
else fail "block order" "$(head -c 300 "$TMP/err")"; fi

# --stream-json carries the edits too
"$BIN" generate "${ARGS[@]}" --edit-threshold 0.3 --post-steps 4 --stream-json -q >"$TMP/stream" 2>"$TMP/err"
if python3 - "$TMP/stream" "$TMP/edit.json" <<'PY'
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"type":"step"' in l.replace(' ', '')]
d = json.load(open(sys.argv[2]))
got = [[(e["pos"], e["from"], e["token"]) for e in s["edits"]] for s in steps]
want = [[(e["pos"], e["from"], e["token"]) for e in s["edits"]] for s in d["steps"]]
assert got == want and any(got), (got, want)
PY
then ok "stream-json: the same edits per step"; else fail "stream edits" "$(head -c 300 "$TMP/err")"; fi

# bad values: one clear line, exit 2
expect_rc "bad --edit-threshold" 2 "$BIN" generate "${ARGS[@]}" --edit-threshold 1.5
expect_grep "bad --edit-threshold message" "edit-threshold.*range" "$TMP/err"
expect_rc "bad --post-steps" 2 "$BIN" generate "${ARGS[@]}" --post-steps x
expect_rc "bad --block-steps" 2 "$BIN" generate "${ARGS[@]}" --block-steps 0
expect_rc "--block-steps names threshold" 2 "$BIN" generate -m "$DEMO" -p x --eps 0.1 --block-steps 4
expect_grep "--block-steps conflict message" "choose different schedules" "$TMP/err"

# ---------------------------------------------------------------- the edit's step, from the JSON
read -r ESTEP NED <<<"$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
st = next(s for s in d["steps"] if s["edits"]); print(st["step"], len(st["edits"]))' "$TMP/edit.json")"

# ---------------------------------------------------------------- unmask record draws the edits
"$BIN" record "${ARGS[@]}" --edit-threshold 0.3 --post-steps 4 --size 140x30 -q --cast "$TMP/e.cast" </dev/null >"$TMP/out" 2>"$TMP/err"
cat >"$TMP/caststep.py" <<'PY'
# caststep.py CAST N: the output written for step N (between markers "step N" and "step N+1")
import json, sys
lines = open(sys.argv[1], encoding='utf-8').read().splitlines()
n = int(sys.argv[2]); on = n == 0; out = ''
for ev in map(json.loads, lines[1:]):
    if ev[1] == 'm':
        if ev[2] == 'step %d' % (n + 1): break
        if ev[2] == 'step %d' % n: on = True
    elif ev[1] == 'o' and on: out += ev[2]
sys.stdout.write(out)
PY
python3 tests/cli/castat.py "$TMP/e.cast" "$ESTEP" >"$TMP/at" 2>&1
python3 tests/cli/castat.py "$TMP/e.cast" $((ESTEP - 1)) >"$TMP/before" 2>&1
python3 "$TMP/caststep.py" "$TMP/e.cast" "$ESTEP" >"$TMP/at.raw" 2>&1
python3 "$TMP/caststep.py" "$TMP/e.cast" $((ESTEP - 1)) >"$TMP/before.raw" 2>&1
# the edited role's background, #875f00, as a truecolour or xterm-256 (136) SGR parameter
EDITED_BG='48;(2;135;95;0|5;136)[;m]'
if sed -n 30p "$TMP/at" | grep -qF "edits $NED  " && sed -n 29p "$TMP/at" | grep -qF "edited" && grep -qE "$EDITED_BG" "$TMP/at.raw"; then
  ok "record: step $ESTEP shows edits $NED, the legend and the edited colour"
else fail "record edits" "$(sed -n 30p "$TMP/at")"; fi
if sed -n 30p "$TMP/before" | grep -qF "edits 0  " && ! grep -qE "$EDITED_BG" "$TMP/before.raw"; then ok "record: the step before has no edit"
else fail "record before" "$(sed -n 30p "$TMP/before")"; fi

# ---------------------------------------------------------------- the visualizer
if ! command -v tmux >/dev/null 2>&1; then
  skip "visualizer edits" "tmux not installed"; finish; exit 0
fi
SOCK=unmask-edit-test-$$
SLOW=1; [ "${UNMASK_VARIANT:-release}" = release ] || SLOW=4
cat >"$TMP/tmux.conf" <<'EOF'
set -g default-terminal "tmux-256color"
set -g remain-on-exit on
set -g status off
EOF
T() { tmux -u -L "$SOCK" -f "$TMP/tmux.conf" "$@"; }
trap 'T kill-server 2>/dev/null; rm -rf "$TMP"' EXIT
RUN="env -u NO_COLOR LANG=C.UTF-8 LC_ALL=C.UTF-8"
T new-session -d -s keep "sleep 600"
rm -f "$TMP/rc"
T new-session -d -s ui -x 160 -y 30 "$RUN $BIN -m $DEMO -t 1 --no-chat -p 'The cat' --gen 24 --threshold 0.5 --block 8 --edit-threshold 0.3 --post-steps 4 --paused --pace 0; echo \$? >$TMP/rc"
cap() { T capture-pane -p -t ui; }
status_line() { cap | sed -n '$p'; }
step_now() { status_line | sed -n 's/^ *step \([0-9]*\)[/ ].*/\1/p'; }
wait_for() { local i n=$((50 * SLOW)); for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.1; done; return 1; }
settled() { status_line | grep -q 'PAUSED *$' && ! status_line | grep -q finishing; }
step_is() { [ "$(step_now)" = "$1" ] && settled; }
wait_for settled
for ((k = 1; k <= ESTEP; k++)); do T send-keys -t ui n; wait_for step_is "$k"; done
if step_is "$ESTEP" && status_line | grep -qF "edits $NED  " && cap | tail -n 2 | head -n 1 | grep -qF edited; then
  ok "visualizer: step $ESTEP shows edits $NED and the legend names edited tokens"
else fail "visualizer edits" "$(status_line)"; fi
T send-keys -t ui "["
if wait_for bash -c "tmux -u -L $SOCK capture-pane -p -t ui | sed -n '\$p' | grep -q 'REWIND' " && status_line | grep -qF "edits 0  "; then
  ok "visualizer: rewound one step, no edit"
else fail "visualizer rewind" "$(status_line)"; fi
T send-keys -t ui x                                       # editing off from the next step
if wait_for bash -c "tmux -u -L $SOCK capture-pane -p -t ui | sed -n '\$p' | grep -qF 'token editing off: from the next step'"; then
  ok "visualizer: x turns editing off"; else fail "x off" "$(status_line)"; fi
T send-keys -t ui x
if wait_for bash -c "tmux -u -L $SOCK capture-pane -p -t ui | sed -n '\$p' | grep -qF 'token editing on (p > 0.30, 4 post steps)'"; then
  ok "visualizer: x turns it on again, with its thresholds"; else fail "x on" "$(status_line)"; fi
T send-keys -t ui q
wait_for test -s "$TMP/rc"
finish
