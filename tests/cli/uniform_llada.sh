# uniform_llada.sh: a llada file (the architecture unmask's trainer writes) that says
# unmask.uniform_state = true, from the command line, on tiny-llada random weights with the key
# and the diffusion.* sampler keys added (gguf_edit.py): info says it decodes uniform-state, as
# it says for DiffusionGemma, naming the key; generate runs the uniform schedule by default with
# the file's settings, no self-conditioning and no cache; the canvas starts as noise and shows
# the argmax; a masked schedule, a cache or self-conditioning are refused with a message; a key
# that is not a bool and a missing canvas_length are one line naming the key; the same file
# without the key (or with it false) decodes masked as before; eval --sudoku runs it.
SUITE=uniform_llada
. "$(dirname "$0")/lib.sh"

B=$TMP/base.gguf
M=$TMP/us.gguf
"$BIN" synth --shape tiny-llada --type f32 -o "$B" 2>/dev/null
EB="set:diffusion.canvas_length:u32:16 set:diffusion.eb_max_steps:u32:5 set:diffusion.eb_entropy_bound:f32:3"
python3 tests/cli/gguf_edit.py "$B" "$M" set:unmask.uniform_state:bool:1 $EB
python3 tests/cli/gguf_edit.py "$B" "$TMP/off.gguf" set:unmask.uniform_state:bool:0 $EB
python3 tests/cli/gguf_edit.py "$B" "$TMP/u32.gguf" set:unmask.uniform_state:u32:1 $EB
python3 tests/cli/gguf_edit.py "$B" "$TMP/nocl.gguf" set:unmask.uniform_state:bool:1
"$BIN" synth --shape tiny-diffusion-gemma --type f32 -o "$TMP/dg.gguf" 2>/dev/null

expect_rc info 0 "$BIN" info "$M"
expect_grep "info: runnable" "^runnable: yes$" "$TMP/out"
expect_grep "info: decodes uniform-state, naming the key" "^decoding: uniform-state \(unmask\.uniform_state = true\)$" "$TMP/out"
expect_grep "info: the sampler keys" "^  canvas_length +16$" "$TMP/out"
expect_rc info-dgemma 0 "$BIN" info "$TMP/dg.gguf"
expect_grep "info: DiffusionGemma in the same words" "^decoding: uniform-state \(general\.architecture = diffusion-gemma\)$" "$TMP/out"
expect_rc info-without-key 0 "$BIN" info "$B"
expect_grep "info: without the key, masked" "^decoding: masked \(general\.architecture = llada\)$" "$TMP/out"
expect_rc info-json 0 "$BIN" info --json "$M"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["decoding"] == "uniform-state" and d["decoding_from"] == "unmask.uniform_state", d["decoding"]' "$TMP/out" 2>"$TMP/jerr"
then ok "info --json: decoding"; else fail "info --json: decoding" "$(tail -c 300 "$TMP/jerr")"; fi

# malformed: one line naming the key, the same words from info and generate
for c in "u32:key 'unmask\.uniform_state' has type uint32, expected bool" \
         "nocl:required key 'diffusion\.canvas_length' missing \(unmask\.uniform_state = true"; do
  f=${c%%:*}; msg=${c#*:}
  expect_rc "$f: info runs" 0 "$BIN" info "$TMP/$f.gguf"
  expect_grep "$f: info's reason" "^runnable: no: $msg" "$TMP/out"
  if grep -q "^decoding:" "$TMP/out"; then fail "$f: no decoding line when not runnable"; else ok "$f: no decoding line when not runnable"; fi
  expect_rc "$f: generate refuses" 1 "$BIN" generate -m "$TMP/$f.gguf" -p hi --gen 8 -q
  expect_grep "$f: generate's reason" "^unmask generate: $TMP/$f\.gguf: $msg" "$TMP/err"
  [ "$(wc -l <"$TMP/err")" -eq 1 ] && ok "$f: one line" || fail "$f: one line" "$(cat "$TMP/err")"
done

# generate: the uniform schedule by default, the file's settings, two canvases of 16
expect_rc generate 0 "$BIN" generate -m "$M" -p hello --no-chat --gen 32 -t 2 --json
cat >"$TMP/gen.py" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
s = a["settings"]
assert s["schedule"] == "uniform" and s["canvas"] == 16 and s["steps_requested"] == 5, s
assert abs(s["entropy_bound"] - 3) < 1e-6 and s["self_cond"] == "off" and s["cache"] == "none", s
assert 1 <= a["steps_run"] <= 10 and len(a["tokens"]) == a["n_prompt"] + 32, a["steps_run"]
PY
if python3 "$TMP/gen.py" "$TMP/out" 2>"$TMP/err"; then ok "generate --json: uniform by default, the file's settings"
else fail "generate --json: uniform by default" "$(tail -n 2 "$TMP/err")"; fi
# --stream-json: the start is noise, every step shows the argmax (top[0]), never self-conditioned,
# the whole [prompt | canvas] through the layers every step
expect_rc generate-stream 0 "$BIN" generate -m "$M" -p hello --no-chat --gen 16 -t 2 --stream-json
cat >"$TMP/stream.py" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
steps = [l for l in lines if l["type"] == "step"]
assert len(steps) == 5 and lines[-1]["type"] == "done", [l["type"] for l in lines]
for k, st in enumerate(steps):
    u = st["uniform"]
    assert u["end"] - u["start"] == 16 and u["canvas_step"] == k + 1 and not u["self_cond"], u
    if not u["stopped"]:
        assert set(u["kind"]) <= {"draft", "accepted"} and u["kind"].count("accepted") == u["accepted"] >= 1, u
assert steps[-1]["uniform"]["stopped"] and set(steps[-1]["uniform"]["kind"]) <= {"kept", "cut"}
PY
if python3 "$TMP/stream.py" "$TMP/out" 2>"$TMP/err"; then ok "--stream-json: the uniform object per step, self-conditioning off"
else fail "--stream-json: the uniform object" "$(tail -n 2 "$TMP/err")"; fi

expect_rc masked-schedule-refused 1 "$BIN" generate -m "$M" -p hi --gen 16 --schedule block
expect_grep masked-schedule-refused-msg "this LLaDA file is a uniform-state model \(unmask\.uniform_state = true\): it decodes with the uniform schedule only" "$TMP/err"
expect_rc eb-refused 1 "$BIN" generate -m "$M" -p hi --gen 16 --eb-gamma 1
expect_grep eb-refused-msg "uniform schedule only" "$TMP/err"
expect_rc cache-refused 1 "$BIN" generate -m "$M" -p hi --gen 16 --cache prefix
expect_grep cache-refused-msg "attends both ways over \[prompt \| canvas\].*\(--cache none\)" "$TMP/err"
expect_rc self-cond-refused 1 "$BIN" generate -m "$M" -p hi --gen 16 --self-cond auto
expect_grep self-cond-refused-msg "no self-conditioning weights" "$TMP/err"
expect_rc self-cond-off 0 "$BIN" generate -m "$M" -p hi --gen 16 --self-cond off -q

# eval --sudoku: its 81-cell default makes canvases here, not one block (which would be refused)
expect_rc eval-sudoku 0 "$BIN" eval -m "$M" --sudoku 1 --no-chat -t 2 -q
expect_grep eval-sudoku-uniform "^settings: gen 81, steps 5, schedule uniform" "$TMP/out"

# without the key, or with it false: masked decoding as before (block schedule, every mask filled)
for f in base off; do
  expect_rc "$f: decodes masked" 0 "$BIN" generate -m "$TMP/$f.gguf" -p hello --no-chat --gen 16 --steps 8 -t 2 --json
  if python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); assert a["settings"]["schedule"] == "block" and a["steps_run"] == 8, a["settings"]["schedule"]' "$TMP/out" 2>"$TMP/jerr"
  then ok "$f: the block schedule"; else fail "$f: the block schedule" "$(tail -c 300 "$TMP/jerr")"; fi
done
expect_rc without-key-refuses-uniform 1 "$BIN" generate -m "$B" -p hi --gen 16 --schedule uniform
expect_grep without-key-refuses-uniform-msg "the uniform schedule is for uniform-state models \(this is LLaDA\)" "$TMP/err"
finish
