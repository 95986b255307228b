#!/usr/bin/env bash
# record.sh: recording end to end. `unmask record` on a synthetic model (no terminal:
# stdin /dev/null, stdout a file), its files read back by independent decoders: the cast by
# python3's json, the GIF by gifsicle and by a small GIF decoder written here in Python (not
# unmask's code). Then the visualizer in a private tmux server: the g key (REC in the status
# line, a timestamped decodable GIF), --gif/--cast for the session, finished on q and SIGINT.
SUITE=record
. "$(dirname "$0")/lib.sh"
ROOT=${UNMASK_ROOT:-$PWD}
HAVE_PY=1; command -v python3 >/dev/null 2>&1 || HAVE_PY=0
HAVE_GIFSICLE=1; command -v gifsicle >/dev/null 2>&1 || HAVE_GIFSICLE=0

# gifdec.py GIF: prints "W H NFRAMES LOOP", then per frame "delay R,G,B R,G,B ..." for the
# pixels named by PIXELS="x,y x,y ..." in the composited frame (disposal 1, transparency).
cat >"$TMP/gifdec.py" <<'EOF'
import os, sys
def decode(path):
    d = open(path, 'rb').read()
    assert d[:6] in (b'GIF89a', b'GIF87a'), 'not a GIF'
    W = d[6] | d[7] << 8; H = d[8] | d[9] << 8; flags = d[10]; p = 13; gct = []
    if flags & 0x80:
        n = 2 << (flags & 7); gct = [tuple(d[p + 3*i:p + 3*i + 3]) for i in range(n)]; p += 3 * n
    canvas = bytearray(W * H); frames = []; delays = []; trans = None; delay = 0; loop = None
    while True:
        b = d[p]; p += 1
        if b == 0x3B: break
        if b == 0x21:
            label = d[p]; p += 1; blocks = []
            while d[p]: blocks.append(d[p + 1:p + 1 + d[p]]); p += 1 + d[p]
            p += 1
            if label == 0xF9: g = blocks[0]; delay = g[1] | g[2] << 8; trans = g[3] if g[0] & 1 else None
            elif label == 0xFF and blocks[0][:11] == b'NETSCAPE2.0': loop = blocks[1][1] | blocks[1][2] << 8
            continue
        assert b == 0x2C, 'bad block %#x' % b
        x, y, w, h = (d[p] | d[p+1] << 8, d[p+2] | d[p+3] << 8, d[p+4] | d[p+5] << 8, d[p+6] | d[p+7] << 8)
        assert not d[p + 8] & 0xC0, 'local colour table / interlace not expected'
        p += 9; mcs = d[p]; p += 1; data = bytearray()
        while d[p]: data += d[p + 1:p + 1 + d[p]]; p += 1 + d[p]
        p += 1
        clear = 1 << mcs; size = mcs + 1; table = [bytes([i]) for i in range(clear)] + [b'', b'']
        out = bytearray(); prev = None; bit = 0; nbits = len(data) * 8
        acc = int.from_bytes(data, 'little')
        while bit + size <= nbits:
            code = (acc >> bit) & ((1 << size) - 1); bit += size
            if code == clear: size = mcs + 1; del table[clear + 2:]; prev = None; continue
            if code == clear + 1: break
            if code < len(table): entry = table[code]
            elif code == len(table) and prev is not None: entry = prev + prev[:1]
            else: raise ValueError('bad LZW code %d' % code)
            out += entry
            if prev is not None and len(table) < 4096:
                table.append(prev + entry[:1])
                if len(table) == (1 << size) and size < 12: size += 1
            prev = entry
        assert len(out) >= w * h, 'short image data'
        for j in range(h):
            row = out[j * w:(j + 1) * w]; base = (y + j) * W + x
            for i, v in enumerate(row):
                if v != trans: canvas[base + i] = v
        frames.append(bytes(canvas)); delays.append(delay); trans = None
    return W, H, gct, delays, frames, loop
W, H, pal, delays, frames, loop = decode(sys.argv[1])
print(W, H, len(frames), loop)
pts = [tuple(int(v) for v in s.split(',')) for s in os.environ.get('PIXELS', '').split()]
for f, fr in enumerate(frames):
    print(delays[f], ' '.join('%02x%02x%02x' % pal[fr[y * W + x]] for x, y in pts))
EOF

# ---------------------------------------------------------------- usage errors
expect_rc "record --help" 0 "$BIN" record --help
expect_grep "record --help lists --gif" '--gif FILE' "$TMP/out"
expect_rc "record: no prompt: exit 2" 2 "$BIN" record --gif "$TMP/x.gif"
expect_grep "record: no prompt: says -p" '-p PROMPT is required' "$TMP/err"
expect_rc "record: no output file: exit 2" 2 "$BIN" record -p hi
expect_grep "record: no output: says --gif/--cast" 'give --gif FILE and/or --cast FILE' "$TMP/err"
expect_rc "record: bad --size: exit 2" 2 "$BIN" record -p hi --gif "$TMP/x.gif" --size 100by30
expect_grep "record: bad --size: named" "--size: '100by30' is not COLSxROWS" "$TMP/err"
expect_rc "record: too small --size: exit 2" 2 "$BIN" record -p hi --gif "$TMP/x.gif" --size 20x5
expect_rc "record: bad --delay-cs: exit 2" 2 "$BIN" record -p hi --gif "$TMP/x.gif" --delay-cs 1
expect_rc "record: unknown option: exit 2" 2 "$BIN" record -p hi --gif "$TMP/x.gif" --frob
expect_rc "record: bad generation flag: exit 2" 2 "$BIN" record -p hi --gif "$TMP/x.gif" --steps x
expect_rc "record: missing theme: exit 1" 1 "$BIN" record -p hi --gif "$TMP/x.gif" --theme "$TMP/none.theme"

# ---------------------------------------------------------------- headless run on a synthetic model
MODEL=$TMP/tiny.gguf
if ! "$BIN" synth --shape tiny-llada --type q8_0 -o "$MODEL" >/dev/null 2>&1; then
  fail "synth tiny-llada" "could not make the test model"; finish; exit 0
fi
expect_rc "record: unwritable output: exit 1" 1 "$BIN" record -m "$MODEL" -p hi --gen 16 --steps 8 --gif "$TMP/no/such/dir/a.gif"
expect_grep "record: unwritable output: names the file" 'no/such/dir/a.gif' "$TMP/err"

# a theme file with an exact xterm colour (#870000 = index 88) as the status background
printf 'name = rectest\nstatus = #eeeeee on #870000\n' >"$TMP/rectest.theme"
( cd "$TMP" && "$BIN" record -m "$MODEL" -p "Once upon a time" --gen 16 --steps 8 --size 100x30 \
    --gif "$TMP/a.gif" --cast "$TMP/a.cast" </dev/null >"$TMP/out" 2>"$TMP/err" ); rc=$?
if [ $rc = 0 ]; then ok "record: exit 0 with no terminal"; else fail "record: exit status" "rc $rc: $(tail -c 400 "$TMP/err")"; fi
if [ ! -s "$TMP/out" ]; then ok "record: nothing on stdout"; else fail "record: stdout" "$(head -c 200 "$TMP/out")"; fi
expect_grep "record: summary on stderr" 'recorded 8 steps .*a.gif: 9 frames' "$TMP/err"
if [ -n "$(temps_in "$TMP")" ]; then fail "record: no temporary files left" "$(ls -A "$TMP")"; else ok "record: no temporary files left"; fi

if [ $HAVE_PY = 1 ]; then
  python3 - "$TMP/a.cast" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
lines = open(sys.argv[1], encoding='utf-8').read().splitlines()
h = json.loads(lines[0])
assert h['version'] == 2 and h['width'] == 100 and h['height'] == 30, h
assert h['env']['TERM'] and 'Once upon a time' in h['title'], h
assert isinstance(h['timestamp'], int)
ev = [json.loads(l) for l in lines[1:]]
assert all(len(e) == 3 and isinstance(e[0], (int, float)) and e[1] in 'omr' for e in ev), 'event shape'
ts = [e[0] for e in ev]
assert ts == sorted(ts) and ts[0] >= 0, 'times decrease'
marks = [e[2] for e in ev if e[1] == 'm']
assert marks == ['step %d' % k for k in range(1, 9)], marks
assert ev[0][1] == 'o' and '\x1b[2J' in ev[0][2], 'first event: a full redraw'
assert sum(1 for e in ev if e[1] == 'o' and e[2]) == 9, 'one output event per frame'
# paced as the GIF: frame k at k x 0.08 s (the default --delay-cs 8), then the last frame held
# 3 s (--hold-cs 300) by an empty event; not the engine's wall clock
outs = [e for e in ev if e[1] == 'o' and e[2]]
assert [round(e[0], 3) for e in outs] == [round(0.08 * k, 3) for k in range(9)], [e[0] for e in outs]
assert ev[-1][1] == 'o' and ev[-1][2] == '' and abs(ev[-1][0] - (0.64 + 3.0)) < 1e-6, ev[-1]
assert ' step 0/8 ' in ev[0][2], 'status line text in the first frame'
print('cast ok')
EOF
  if grep -q 'cast ok' "$TMP/py"; then ok "record: cast is JSON lines, header, one marker per step"; else fail "record: cast" "$(tail -5 "$TMP/py")"; fi
else
  skip "record: cast parse" "python3 not installed"
fi

if [ $HAVE_GIFSICLE = 1 ]; then
  gifsicle --info "$TMP/a.gif" >"$TMP/info" 2>&1
  if grep -q '9 images' "$TMP/info" && grep -q 'logical screen 800x480' "$TMP/info" && grep -q 'loop forever' "$TMP/info"; then
    ok "record: gifsicle sees 9 frames of 800x480, looping"; else fail "record: gifsicle --info" "$(head -5 "$TMP/info")"; fi
  if gifsicle -o /dev/null "$TMP/a.gif" >"$TMP/gs" 2>&1 && [ ! -s "$TMP/gs" ]; then ok "record: gifsicle decodes every frame"
  else fail "record: gifsicle decode" "$(head -3 "$TMP/gs")"; fi
else
  skip "record: gifsicle checks" "gifsicle not installed"
fi

# pixels: (2, 472) is inside the status line's first cell (row 29, a blank in the status
# colours); the theme gives its background. Frame delays: 8 cs, the last held 300 cs.
if [ $HAVE_PY = 1 ]; then
  PIXELS="2,472 5,470" python3 "$TMP/gifdec.py" "$TMP/a.gif" >"$TMP/dec" 2>&1
  if [ "$(head -1 "$TMP/dec")" = "800 480 9 0" ]; then ok "record: own decoder: 800x480, 9 frames, loop forever"
  else fail "record: own decoder header" "$(head -3 "$TMP/dec")"; fi
  if [ "$(sed 1d "$TMP/dec" | awk '{print $1}' | tr '\n' ' ')" = "8 8 8 8 8 8 8 8 300 " ]; then ok "record: delays 8 cs, final hold 300 cs"
  else fail "record: delays" "$(sed 1d "$TMP/dec" | awk '{print $1}' | tr '\n' ' ')"; fi
  if [ "$(sed 1d "$TMP/dec" | awk '{print $2, $3}' | sort -u)" = "303030 303030" ]; then ok "record: status line has viridis's #303030 in every frame"
  else fail "record: status line colour" "$(sed 1d "$TMP/dec" | sort -u | head -3)"; fi

  ( cd "$TMP" && "$BIN" record -m "$MODEL" -p hi --gen 16 --steps 4 --size 80x20 --delay-cs 5 --hold-cs 100 -q \
      --theme "$TMP/rectest.theme" --gif "$TMP/b.gif" </dev/null >"$TMP/out" 2>"$TMP/err" ); rc=$?
  PIXELS="2,$((19 * 16 + 8))" python3 "$TMP/gifdec.py" "$TMP/b.gif" >"$TMP/dec" 2>&1
  if [ $rc = 0 ] && [ "$(head -1 "$TMP/dec")" = "640 320 5 0" ]; then ok "record: --size 80x20 --steps 4: 640x320, 5 frames"
  else fail "record: --size" "rc $rc $(head -2 "$TMP/dec") $(head -c 300 "$TMP/err")"; fi
  if [ "$(sed 1d "$TMP/dec" | tr '\n' ' ')" = "5 870000 5 870000 5 870000 5 870000 100 870000 " ]; then ok "record: --delay-cs, --hold-cs, --theme file colours"
  else fail "record: delay/hold/theme" "$(sed 1d "$TMP/dec" | tr '\n' ' ')"; fi
  if [ ! -s "$TMP/err" ]; then ok "record: -q prints nothing"; else fail "record: -q" "$(head -c 200 "$TMP/err")"; fi
else
  skip "record: GIF pixels" "python3 not installed"
fi

# SIGINT mid-run: stops after the step in flight, both files finished and consistent
if sig_ignored INT; then
  skip "record: SIGINT" "SIGINT is ignored in this shell (started as a background job?): it cannot be delivered"
else
( cd "$TMP" && exec "$BIN" record -m "$MODEL" -p hi --gen 256 --steps 256 -t 1 --gif "$TMP/i.gif" --cast "$TMP/i.cast" \
    </dev/null >/dev/null 2>"$TMP/ierr" ) &
rpid=$!
for ((k = 0; k < 100; k++)); do grep -q 'step [1-9][0-9]*/256' "$TMP/ierr" 2>/dev/null && break; sleep 0.05; done
kill -INT $rpid 2>/dev/null
wait $rpid; rc=$?
if [ $rc = 130 ] && grep -q 'interrupted after step' "$TMP/ierr"; then ok "record: SIGINT: exit 130, says so"
else fail "record: SIGINT" "rc $rc: $(tail -c 300 "$TMP/ierr")"; fi
if [ -s "$TMP/i.gif" ] && [ -s "$TMP/i.cast" ] && [ -z "$(temps_in "$TMP")" ]; then ok "record: SIGINT: files finished, no temporaries"
else fail "record: SIGINT files" "$(ls "$TMP")"; fi
if [ $HAVE_GIFSICLE = 1 ]; then
  n=$(gifsicle --info "$TMP/i.gif" 2>/dev/null | sed -n 's/.* \([0-9]*\) images$/\1/p')
  m=$(grep -c '"m", "step ' "$TMP/i.cast")
  if [ -n "$n" ] && [ "$n" = $((m + 1)) ] && [ "$m" -lt 256 ] && gifsicle -o /dev/null "$TMP/i.gif" 2>/dev/null
  then ok "record: SIGINT: GIF decodes, frames = markers + 1 ($n)"; else fail "record: SIGINT frames" "gif $n, markers $m"; fi
fi
fi

# tools/make-readme-gif.sh (docs/demo.gif) on the synthetic model: prints the command, 33 frames
if MODEL="$MODEL" OUT="$TMP/demo.gif" UNMASK_BIN="$BIN" bash "$ROOT/tools/make-readme-gif.sh" >"$TMP/out" 2>"$TMP/err" \
   && grep -q '^unmask record -m .* --gen 64 --steps 32 --size 100x30 .*--gif ' "$TMP/out" \
   && { [ $HAVE_GIFSICLE = 0 ] || grep -q '33 frames' "$TMP/out"; } && [ "$(stat -c %s "$TMP/demo.gif")" -le 2097152 ]; then
  ok "make-readme-gif: prints the command, 33 frames, <= 2 MB"
else fail "make-readme-gif" "$(cat "$TMP/out" "$TMP/err" | head -5)"; fi

# ---------------------------------------------------------------- the grid layout (a sudoku)
# A stand-in for the sudoku model: the synthetic model's vocabulary is one token per byte, so a
# puzzle prompt is 81 cell tokens after the BOS, as the sudoku model's is. Its answers are
# random bytes: these checks are about where things are drawn, not what. A preset gives the
# prompt and the layout (no -p, no --layout). The cast's last screen is rebuilt by the small
# terminal of tests/cli/castat.py (cursor moves, clears, wide and combining characters), not unmask's.
cat >"$TMP/castscreen.py" <<'EOF'
import os, sys
sys.path.insert(0, os.environ['CASTAT_DIR'])
from castat import screen
scr, W, H = screen(sys.argv[1])
# checks named on the command line: grid X0 Y0 (box lines and 81 drawn cells of the grid
# whose top-left is column X0, row Y0), puzzle X0 Y0 PUZZLE (its givens in place), row Y TEXT
# (row Y contains TEXT), norule (no ┼ anywhere)
row = lambda r: ''.join(scr[r])
args = sys.argv[2:]; bad = []
while args:
    k = args.pop(0)
    if k in ('grid', 'puzzle'):
        x0, y0 = int(args.pop(0)), int(args.pop(0)); pz = args.pop(0) if k == 'puzzle' else None
        for gy in range(11):
            for gx in range(23):
                c = scr[y0 + gy][x0 + gx]
                rule, line = gy in (3, 7), gx in (7, 15)
                want = ('┼' if line else '─') if rule else '│' if line else None
                if want and c != want: bad.append('%s (%d,%d): %r not %r' % (k, x0 + gx, y0 + gy, c, want))
        for r in range(9):
            for cc in range(9):
                c = scr[y0 + r + r // 3][x0 + 8 * (cc // 3) + 1 + 2 * (cc % 3)]
                if c.strip() == '' or c == '░': bad.append('%s cell (%d,%d) %r' % (k, r, cc, c))
                if pz and c != pz[9 * r + cc]: bad.append('given (%d,%d) %r not %r' % (r, cc, c, pz[9 * r + cc]))
    elif k == 'row':
        r, t = int(args.pop(0)), args.pop(0)
        if t not in row(r): bad.append('row %d lacks %r: %r' % (r, t, row(r)))
    elif k == 'norule':
        if any('┼' in row(r) for r in range(H)): bad.append('a ┼ on the screen')
print('screen ok' if not bad else '\n'.join(bad[:6]))
EOF
PUZZLE=53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79
mkdir -p "$TMP/mc"
printf '[sud]\npath = %s\ngen = 81\nsteps = 27\nlayout = grid9\nprompt = %s\n[bare]\npath = %s\n' "$MODEL" "$PUZZLE" "$MODEL" >"$TMP/mc/models.conf"
screen() { local name=$1 cast=$2; shift 2
  if [ $HAVE_PY = 0 ]; then skip "$name" "python3 not installed"; return; fi
  CASTAT_DIR="$(dirname "$0")" python3 "$TMP/castscreen.py" "$cast" "$@" >"$TMP/py" 2>&1
  if grep -q 'screen ok' "$TMP/py"; then ok "$name"; else fail "$name" "$(head -c 600 "$TMP/py")"; fi; }
( cd "$TMP/mc" && "$BIN" record -M sud -q --cast g.cast --gif g.gif </dev/null >"$TMP/out" 2>"$TMP/err" ); rc=$?
if [ $rc = 0 ]; then ok "grid: record -M with the preset's prompt and layout"; else fail "grid: record -M" "rc $rc: $(head -c 300 "$TMP/err")"; fi
screen "grid: the puzzle's givens in place, the answer's 81 cells in a box-lined grid" "$TMP/mc/g.cast" \
  puzzle 0 2 "$PUZZLE" grid 26 2 row 1 ' puzzle ' row 1 ' answer'
( cd "$TMP/mc" && "$BIN" record -M sud -q --layout text --cast t.cast </dev/null >"$TMP/out" 2>"$TMP/err" )
screen "grid: --layout text overrides the preset" "$TMP/mc/t.cast" norule row 1 "${PUZZLE:0:40}"
# the GIF draws the same frame: the ┼ of the answer grid's first box line (cell 33,5) has
# pixels of the border colour (viridis #4e4e4e); in the text layout that cell has none
if [ $HAVE_PY = 1 ]; then
  px=""; for ((yy = 80; yy < 96; yy++)); do for ((xx = 264; xx < 272; xx++)); do px="$px $xx,$yy"; done; done
  ( cd "$TMP/mc" && "$BIN" record -M sud -q --layout text --gif t.gif </dev/null >/dev/null 2>&1 )
  g=$(PIXELS="$px" python3 "$TMP/gifdec.py" "$TMP/mc/g.gif" 2>&1 | tail -1 | grep -c 4e4e4e)
  t=$(PIXELS="$px" python3 "$TMP/gifdec.py" "$TMP/mc/t.gif" 2>&1 | tail -1 | grep -c 4e4e4e)
  if [ "$g" = 1 ] && [ "$t" = 0 ]; then ok "grid: the GIF shows the box lines"; else fail "grid: GIF box lines" "grid $g, text $t"; fi
fi
# generate takes the preset's prompt too (BOS + 81 cells); a preset without one still needs -p
( cd "$TMP/mc" && "$BIN" generate -M sud -q --json >"$TMP/out" 2>"$TMP/err" ); rc=$?
if [ $rc = 0 ] && grep -q '"n_prompt": *82' "$TMP/out"; then ok "grid: generate -M uses the preset's prompt"
else fail "grid: generate -M prompt" "rc $rc: $(head -c 300 "$TMP/out" "$TMP/err")"; fi
( cd "$TMP/mc" && "$BIN" generate -M bare -q >"$TMP/out" 2>"$TMP/err" ); rc=$?
if [ $rc = 2 ] && grep -q -- '-p PROMPT is required unless the preset has a prompt' "$TMP/err"; then ok "grid: no -p and no preset prompt: exit 2"
else fail "grid: no prompt" "rc $rc: $(head -c 300 "$TMP/err")"; fi
# the bundled demo model writes words: the grid still holds 81 of its tokens, the prompt as text
DEMO=$ROOT/models/unmask-demo.gguf
"$BIN" record -m "$DEMO" -p "Once upon a time" --gen 81 --steps 27 --layout grid9 -q --cast "$TMP/d.cast" </dev/null >/dev/null 2>"$TMP/err"
screen "grid: the demo model's 81 words in the grid, the prompt as text" "$TMP/d.cast" grid 26 2 row 1 ' prompt ' row 2 'Once upon a time'
"$BIN" record -m "$DEMO" -p "Once upon a time" --gen 40 --steps 20 --layout grid9 -q --cast "$TMP/f.cast" </dev/null >/dev/null 2>"$TMP/err"
screen "grid: 40 generated positions: text, and the status line says why" "$TMP/f.cast" norule row 29 'grid9: 40 generated, needs 81'

# ---------------------------------------------------------------- the visualizer: g, --gif, --cast
. "$(dirname "$0")/tmuxlib.sh"
tmux_begin rec "record: visualizer"
mkdir -p "$TMP/run"
start() {  # start ARGS... : 100x30 session running unmask ARGS in $TMP/run
  T kill-session -t ui 2>/dev/null
  rm -f "$TMP/rc" "$TMP/stty.before" "$TMP/stty.after"
  T new-session -d -s ui -x 100 -y 30 \
    "cd $TMP/run; stty -g >$TMP/stty.before; $RUN $BIN $* 2>$TMP/ui.err; echo \$? >$TMP/rc; stty -g >$TMP/stty.after"
}
status_line() { cap | sed -n '$p'; }
screen_has() { cap | grep -qF -- "$1"; }
status_has() { status_line | grep -qF -- "$1"; }
status_lacks() { ! status_line | grep -qF -- "$1"; }
pane() { T list-panes -t ui -F "$1"; }

start --demo-ui --delay-ms 60
wait_for screen_has "step " || fail "visualizer starts" "$(cap | tail -3)"
if status_lacks " REC "; then ok "g: no REC before recording"; else fail "g: REC too early" "$(status_line)"; fi
T send-keys -t ui g
if wait_for status_has " REC "; then ok "g: REC in the status line"; else fail "g: REC shown" "$(status_line)"; fi
sleep 0.5
T send-keys -t ui g
if wait_for status_has "saved unmask-"; then ok "g again: says the file was saved"; else fail "g: saved message" "$(status_line)"; fi
if status_lacks " REC "; then ok "g again: REC gone"; else fail "g: REC still shown" "$(status_line)"; fi
gif=$(ls "$TMP/run" | grep -E '^unmask-[0-9]{8}-[0-9]{6}(-[0-9]+)?\.gif$' | head -1)
if [ -n "$gif" ]; then ok "g: timestamped file unmask-YYYYmmdd-HHMMSS.gif"; else fail "g: file" "$(ls "$TMP/run")"; fi
if [ -n "$gif" ] && [ $HAVE_GIFSICLE = 1 ]; then
  gifsicle --info "$TMP/run/$gif" >"$TMP/info" 2>&1
  n=$(sed -n 's/.* \([0-9]*\) images$/\1/p' "$TMP/info")
  if grep -q 'logical screen 800x480' "$TMP/info" && [ "${n:-0}" -ge 2 ] && gifsicle -o /dev/null "$TMP/run/$gif" 2>/dev/null
  then ok "g: the GIF decodes, 800x480, $n frames"; else fail "g: GIF" "$(head -3 "$TMP/info")"; fi
fi
# the GIF is of the run, not of the recording: no REC badge and no "recording ..." message
# (both drawn in the theme's #fde725) anywhere in the status row (the last 16 pixel rows)
if [ -n "$gif" ] && [ $HAVE_PY = 1 ]; then
  python3 - "$TMP/gifdec.py" "$TMP/run/$gif" >"$TMP/py" 2>&1 <<'EOF2'
import sys
src = open(sys.argv[1]).read().split('W, H, pal, delays, frames, loop = decode')[0]
exec(src)
W, H, pal, delays, frames, loop = decode(sys.argv[2])
yellow = min(range(len(pal)), key=lambda i: sum((a - b) ** 2 for a, b in zip(pal[i], (0xfd, 0xe7, 0x25))))
bad = [k for k, fr in enumerate(frames) if yellow in fr[(H - 16) * W:]]
print('frames %d, with REC or its message: %s' % (len(frames), bad))
EOF2
  if grep -q 'with REC or its message: \[\]' "$TMP/py"; then ok "g: the GIF's frames show no REC badge and no recording message"
  else fail "g: REC in the GIF" "$(tail -2 "$TMP/py")"; fi
fi
T send-keys -t ui '?'
if wait_for screen_has "start / stop a GIF recording"; then ok "? lists g"; else fail "? lists g" "$(cap | grep -F ' g ' | head -2)"; fi
T send-keys -t ui Escape
# g then q: the recording is finished on the way out
rm -f "$TMP/run/"*.gif
T send-keys -t ui g
wait_for status_has " REC "
T send-keys -t ui q
wait_for test -s "$TMP/stty.after"
gif=$(ls "$TMP/run" | grep -E '^unmask-.*\.gif$' | head -1)
if [ -n "$gif" ] && [ "$(cat "$TMP/rc" 2>/dev/null)" = 0 ] && grep -q "saved $gif" "$TMP/ui.err"; then ok "q while recording: GIF saved, said on stderr"
else fail "q while recording" "rc $(cat "$TMP/rc" 2>/dev/null) files: $(ls "$TMP/run") err: $(cat "$TMP/ui.err")"; fi
if [ $HAVE_GIFSICLE = 0 ]; then skip "q while recording: decode" "gifsicle not installed"
elif [ -n "$gif" ] && gifsicle -o /dev/null "$TMP/run/$gif" 2>/dev/null; then ok "q while recording: GIF decodes"; else fail "q while recording: decode" "$gif"; fi

# --gif/--cast for the session, ended by SIGINT: files finished, terminal restored
rm -f "$TMP/run/"*
start --demo-ui --delay-ms 40 --gen 24 --steps 8 --gif s.gif --cast s.cast
wait_for status_has "DONE" || fail "--gif session runs to DONE" "$(status_line)"
if status_has " REC "; then ok "--gif: REC shown"; else fail "--gif: REC" "$(status_line)"; fi
pid=$(pgrep -P "$(pane '#{pane_pid}')" | head -1)
[ -n "$pid" ] && kill -INT "$pid"
wait_for test -s "$TMP/stty.after"
if [ "$(cat "$TMP/rc" 2>/dev/null)" = 130 ]; then ok "SIGINT while recording: exit 130"; else fail "SIGINT exit" "$(cat "$TMP/rc" 2>/dev/null)"; fi
if cmp -s "$TMP/stty.before" "$TMP/stty.after" && [ "$(pane '#{alternate_on}')" = 0 ]; then ok "SIGINT while recording: terminal restored"
else fail "SIGINT: terminal" ""; fi
if [ -s "$TMP/run/s.gif" ] && [ -s "$TMP/run/s.cast" ] && [ -z "$(temps_in "$TMP/run")" ]; then ok "SIGINT: both files finished, no temporaries"
else fail "SIGINT: files" "$(ls "$TMP/run")"; fi
if [ $HAVE_GIFSICLE = 0 ]; then skip "--gif: decode" "gifsicle not installed"
elif gifsicle -o /dev/null "$TMP/run/s.gif" 2>/dev/null; then ok "--gif: decodes"; else fail "--gif: decode" ""; fi
if [ $HAVE_PY = 1 ]; then
  python3 - "$TMP/run/s.cast" >"$TMP/py" 2>&1 <<'EOF'
import json, sys
lines = open(sys.argv[1], encoding='utf-8').read().splitlines()
h = json.loads(lines[0]); ev = [json.loads(l) for l in lines[1:]]
assert h['version'] == 2 and h['width'] == 100 and h['height'] == 30, h
assert h['env']['TERM'] == 'tmux-256color', h
marks = [e[2] for e in ev if e[1] == 'm']
assert marks == ['step %d' % k for k in range(1, 9)], marks
ts = [e[0] for e in ev]; assert ts == sorted(ts)
assert ts[-1] - ts[0] >= 0.2, 'real times: 8 steps of 40 ms'
print('cast ok')
EOF
  if grep -q 'cast ok' "$TMP/py"; then ok "--cast: header with TERM, markers step 1..8, real times"; else fail "--cast" "$(tail -3 "$TMP/py")"; fi
fi

# a resize while recording: the cast gets a resize event
rm -f "$TMP/run/"*
start --demo-ui --delay-ms 60 --cast r.cast
wait_for screen_has "step "
T resize-window -t ui -x 90 -y 26 2>/dev/null || T resize-pane -t ui -x 90 -y 26
sleep 0.5
T send-keys -t ui q
wait_for test -s "$TMP/stty.after"
if grep -q '"r", "90x26"' "$TMP/run/r.cast" 2>/dev/null; then ok "--cast: resize event"; else fail "--cast: resize" "$(grep '"r"' "$TMP/run/r.cast" 2>/dev/null | head -2)"; fi
start --demo-ui --gif /nonexistent-dir/x.gif
wait_for test -s "$TMP/stty.after"
if [ "$(cat "$TMP/rc" 2>/dev/null)" = 1 ] && grep -q 'nonexistent-dir/x.gif' "$TMP/ui.err" && cmp -s "$TMP/stty.before" "$TMP/stty.after"
then ok "--gif into a missing directory: exit 1, names it, terminal restored"
else fail "--gif bad path" "rc $(cat "$TMP/rc" 2>/dev/null): $(cat "$TMP/ui.err")"; fi
T kill-session -t ui 2>/dev/null
if ls "$TMP"/tsan* >/dev/null 2>&1; then fail "ThreadSanitizer reports" "$(head -30 "$TMP"/tsan*)"; fi
finish
