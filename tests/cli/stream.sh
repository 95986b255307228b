#!/usr/bin/env bash
# stream.sh: `unmask generate --stream-json` (docs/stream.md) on the bundled model, read by
# Python's json module: every line is JSON, a start line, steps 1..N in order, a done line;
# commits add up to the generated length at unique positions of the generated region and
# agree with the final tokens; the answer is `unmask generate`'s for the same settings.
# Flushing is checked without timing: the stream goes into a pipe that holds less than the
# whole run, so the process is necessarily still running when the first step line is read,
# and every read of the pipe returns whole lines (each line is written and flushed on its
# own; a block-buffered writer would hand over 4 KB pieces cut mid-line).
SUITE=stream
. "$(dirname "$0")/lib.sh"

ROOT=${UNMASK_ROOT:-$PWD}
MODEL=$ROOT/models/unmask-demo.gguf
PROMPT="Once upon a time"

expect_rc "--json with --stream-json: exit 2" 2 "$BIN" generate -m "$MODEL" -p hi --json --stream-json
expect_grep "--json with --stream-json: says why" 'both write stdout' "$TMP/err"
"$BIN" generate --help >"$TMP/help"
expect_grep "generate --help lists --stream-json" '^  --stream-json ' "$TMP/help"
if ! command -v python3 >/dev/null 2>&1; then skip stream "python3 not installed"; finish; exit 0; fi
if [ ! -f "$MODEL" ]; then skip stream "the bundled model $MODEL is missing"; finish; exit 0; fi

# ---------------------------------------------------------------- the schema, on two schedules
check_stream() {  # check_stream NAME FLAGS... : stream and plain answer with the same flags
  local name=$1; shift
  "$BIN" generate -m "$MODEL" -p "$PROMPT" --no-chat -q "$@" --stream-json >"$TMP/s.jsonl" 2>"$TMP/s.err"; local rc=$?
  "$BIN" generate -m "$MODEL" -p "$PROMPT" --no-chat -q "$@" >"$TMP/plain.txt" 2>/dev/null
  if [ $rc != 0 ]; then fail "$name: exit $rc" "$(cat "$TMP/s.err")"; return; fi
  python3 - "$TMP/s.jsonl" "$TMP/plain.txt" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
lines = open(sys.argv[1], encoding='utf-8').read().split('\n')
assert lines[-1] == '', 'the stream ends with a newline'
recs = [json.loads(l) for l in lines[:-1]]           # every line is one JSON value
start, steps, done = recs[0], recs[1:-1], recs[-1]
assert start['type'] == 'start' and start['version'] == 1, start.get('type')
assert done['type'] == 'done', done.get('type')
assert all(r['type'] == 'step' for r in steps)
np, ng, nc = start['n_prompt'], start['n_gen'], start['n_canvas']
assert np + ng == nc and ng == start['settings']['gen']
assert len(start['prompt_tokens']) == np and all(isinstance(t['token'], int) and isinstance(t['text'], str) for t in start['prompt_tokens'])
assert ''.join(t['text'] for t in start['prompt_tokens']) == start['prompt'], 'prompt pieces spell the prompt'
for k in ('model', 'arch', 'quant', 'backend', 'kernel'): assert isinstance(start[k], str) and start[k], k
# steps 1..N in order, N = steps_run; schedule state and counters
assert [r['step'] for r in steps] == list(range(1, len(steps) + 1)), [r['step'] for r in steps]
assert done['steps_run'] == len(steps)
masks, passes, elapsed = ng, 0, 0.0
seen, final = set(), done['tokens']
assert len(final) == nc
for r in steps:
    assert 0 <= r['block'] < r['n_blocks'] and r['n_steps'] >= r['step']
    assert r['forward_passes'] > passes; passes = r['forward_passes']
    assert r['elapsed_s'] >= elapsed; elapsed = r['elapsed_s']
    assert r['forward_ms'] >= 0 and r['sample_ms'] >= 0
    assert r['planned'] >= len(r['commits']) or start['settings']['schedule'] == 'threshold'
    for c in r['commits']:
        p = c['pos']
        assert np <= p < nc and p not in seen, ('position', p)
        seen.add(p)
        assert final[p] == c['token'], ('final token', p)
        assert 0 < c['conf'] <= 1 and c['entropy'] >= 0
        top = c['top']
        assert 1 <= len(top) <= 8 and all(top[i]['prob'] >= top[i + 1]['prob'] for i in range(len(top) - 1))
        if start['settings']['temperature'] == 0:          # greedy: the best candidate commits
            assert top[0]['token'] == c['token'] and abs(top[0]['prob'] - c['conf']) < 1e-6
    seen.update(r['filled'])
    masks -= len(r['commits']) + len(r['filled'])
    assert r['masks_left'] == masks, (r['step'], r['masks_left'], masks)
    assert r['done'] == (r is steps[-1])
assert sum(len(r['commits']) + len(r['filled']) for r in steps) == ng, 'commits add up to the generated length'
assert seen == set(range(np, nc))
assert done['forward_passes'] == passes
plain = open(sys.argv[2], encoding='utf-8').read()
assert done['answer'] + '\n' == plain, (done['answer'], plain)
print('ok', len(steps), 'steps', ng, 'tokens')
EOF
  if grep -q '^ok' "$TMP/py"; then ok "$name: $(cat "$TMP/py")"; else fail "$name" "$(tail -4 "$TMP/py")"; fi
}
check_stream "block schedule (the demo preset's)" --gen 96 --steps 48 --block 32
check_stream "threshold schedule" --gen 64 --threshold 0.3
check_stream "sampling, one block" --gen 32 --steps 32 --temp 0.8 --seed 7

# ---------------------------------------------------------------- line by line, while it runs
python3 - "$BIN" "$MODEL" >"$TMP/py" 2>&1 <<'EOF'
import json, os, subprocess, sys
# 160 steps of one commit each: ~90 KB of lines, more than a pipe holds (64 KB), so the
# writer cannot finish before the reader has taken the first lines
p = subprocess.Popen([sys.argv[1], 'generate', '-m', sys.argv[2], '-p', 'Once upon a time', '--no-chat', '-q',
                      '--gen', '160', '--steps', '160', '--stream-json'], stdout=subprocess.PIPE)
fd, buf, reads, alive = p.stdout.fileno(), b'', 0, None
while True:
    chunk = os.read(fd, 1 << 20)
    if not chunk: break
    reads += 1
    assert chunk.endswith(b'\n'), 'read %d ends mid-line: %r' % (reads, chunk[-40:])
    buf += chunk
    if alive is None and buf.count(b'\n') >= 2:
        alive = p.poll() is None
        first_step = json.loads(buf.split(b'\n')[1])
assert p.wait() == 0
assert alive, 'the process had ended before the first step line was read'
assert first_step['type'] == 'step' and first_step['step'] == 1
n = buf.count(b'\n')
assert n == 162, n
print('ok: the first step line read while the run goes on; %d reads, each whole lines' % reads)
EOF
if grep -q '^ok' "$TMP/py"; then ok "flushed per line: $(sed 's/^ok: //' "$TMP/py")"; else fail "flushed per line" "$(tail -4 "$TMP/py")"; fi

# ---------------------------------------------------------------- a failed run ends with an error line
"$BIN" generate -m "$MODEL" -p "$PROMPT" -q --gen 400 --stream-json >"$TMP/e.jsonl" 2>"$TMP/err"; rc=$?
if [ $rc = 1 ] && python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert recs[-1]["type"] == "error" and "context" in recs[-1]["message"], recs' "$TMP/e.jsonl" 2>"$TMP/py"; then
  ok "a run past the context: exit 1, the stream ends with an error line"
else fail "error line" "rc $rc: $(cat "$TMP/e.jsonl" "$TMP/py")"; fi
if "$BIN" generate -m "$MODEL" -p "$PROMPT" -q --gen 8 --steps 4 --stream-json >/dev/full 2>"$TMP/err"; then
  fail "stdout full: fails" "exit 0"
else expect_grep "stdout full: exit 1, says writing failed" '^unmask generate: writing to standard output failed: No space left on device$' "$TMP/err"; fi
finish
