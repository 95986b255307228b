#!/usr/bin/env bash
# hostile_files.sh: what a careless user does with file names (issue 14). Outputs that are an
# input under another name (./M, dir/../M, a symlink, a hard link), two outputs that are one
# file, device nodes and FIFOs as outputs, FIFOs and endless devices as inputs, full disks.
# Every case runs under `timeout 10` and asserts: no hang (exit status not 124), the exit
# status, the message, and that the model's bytes are unchanged (cmp with a pristine copy).
SUITE=hostile_files
. "$(dirname "$0")/lib.sh"
ROOT=${UNMASK_ROOT:-$PWD}

cp "$ROOT/models/unmask-demo.gguf" "$TMP/M"
cp "$TMP/M" "$TMP/M.orig"
mkdir "$TMP/dir"
ln -s M "$TMP/L"
mkfifo "$TMP/F"
cd "$TMP" || exit 1
GEN="-p hi --gen 8 --steps 4"

# hostile NAME WANT_RC PATTERN CMD... : run CMD (10 s at most) with stdin from /dev/null;
# check it did not hang, its exit status, PATTERN (grep -E) on stderr ('' : no check), and
# that the input $KEEP (default M, the model) still has the pristine bytes
hostile() {
  local name=$1 want=$2 pat=$3 keep=${KEEP:-M}; shift 3
  timeout 10 "$@" </dev/null >"$TMP/out" 2>"$TMP/err"; local rc=$? why=""
  [ "$rc" = 124 ] && why="hung (killed by timeout)"
  [ -z "$why" ] && [ "$rc" != "$want" ] && why="exit $rc, wanted $want"
  [ -z "$why" ] && [ -n "$pat" ] && ! grep -qE -- "$pat" "$TMP/err" && why="no /$pat/"
  [ -z "$why" ] && ! cmp -s "$TMP/$keep" "$TMP/M.orig" && why="the input $keep changed"
  if [ -z "$why" ]; then ok "$name"; else fail "$name" "$why; stderr: $(head -c 300 "$TMP/err")"; fi
  cp "$TMP/M.orig" "$TMP/M" 2>/dev/null   # the next case starts from the pristine bytes
}
SAME='is the same file as the input .*refusing to overwrite an input'

# ---------------------------------------------------------------- an output that is an input
cp M M.tmp     # the old writer's fixed temporary name OUT.tmp was this input: SIGBUS, input truncated
KEEP=M.tmp hostile "quantize M.tmp M: allowed, the input M.tmp keeps its bytes" 0 '' "$BIN" quantize -q M.tmp M Q8_0
rm -f M.tmp
ln M H         # a hard link (after the case above, which gave M a new inode)
for out in ./M dir/../M L H "$TMP/M"; do
  hostile "quantize M $out: refused" 1 "OUT.gguf $out: $SAME" "$BIN" quantize -q M "$out" Q8_0
done
hostile "quantize L M (symlink as input): refused" 1 "$SAME" "$BIN" quantize -q L M Q8_0
hostile "record --gif M: refused" 1 "^unmask record: --gif M: is the same file as the input -m M; refusing" \
  "$BIN" record -m M $GEN --gif M
hostile "record --cast dir/../M: refused" 1 "--cast dir/../M: $SAME" "$BIN" record -m M $GEN --cast dir/../M
hostile "record --gif L (symlink): refused" 1 "--gif L: $SAME" "$BIN" record -m M $GEN --gif L
hostile "visualizer --gif M: refused before the terminal" 1 "^unmask: --gif M: $SAME" "$BIN" -m M --gif M
hostile "visualizer --cast ./M: refused" 1 "^unmask: --cast ./M: $SAME" "$BIN" -m M --cast ./M
hostile "logits --out M: refused" 1 "^unmask logits: --out M: $SAME" "$BIN" logits -m M --tokens 1,2 --out M
hostile "logits --out dir/../M: refused" 1 "--out dir/../M: $SAME" "$BIN" logits -m M --tokens 1,2 --out dir/../M
hostile "logits -m L --out H: refused" 1 "--out H: $SAME" "$BIN" logits -m L --tokens 1,2 --out H

# ---------------------------------------------------------------- two outputs, one file
hostile "record --gif X --cast X: refused" 1 "--cast X: is the same file as --gif X" "$BIN" record -m M $GEN --gif X --cast X
hostile "record --gif X --cast ./X: refused" 1 "--cast ./X: is the same file as --gif X" "$BIN" record -m M $GEN --gif X --cast ./X
if [ ! -e X ]; then ok "--gif X --cast X: nothing written"; else fail "--gif X --cast X: X written" ""; fi
hostile "visualizer --gif X --cast X: refused" 1 "^unmask: --cast X: is the same file as --gif X" "$BIN" -m M --gif X --cast X

# ---------------------------------------------------------------- outputs that cannot be written
hostile "quantize into a missing directory: at once" 1 "OUT.gguf nodir/q.gguf: directory nodir: No such file or directory" \
  "$BIN" quantize -q M nodir/q.gguf Q8_0
hostile "record --gif into a missing directory" 1 "--gif nodir/a.gif: directory nodir: No such file or directory" \
  "$BIN" record -m M $GEN --gif nodir/a.gif
hostile "synth -o a directory" 1 "^unmask synth: -o dir: is a directory" "$BIN" synth --shape tiny-llada -o dir

# ---------------------------------------------------------------- device nodes as outputs
# Private nodes for the same devices (mknod, root only): as root, a rename over a device node
# succeeds, and that is the bug guarded here; a build that regressed must not take the
# machine's own /dev/null with it. The block device is a loop minor that is never set up.
if mknod dnull c 1 3 2>/dev/null && mknod dfull c 1 7 2>/dev/null && mknod dblk b 7 250 2>/dev/null &&
   echo x 2>/dev/null >dnull; then                # (a nodev file system lets mknod pass but not open)
  hostile "record --gif /dev/null --cast /dev/null: written in place" 0 '' "$BIN" record -m M $GEN -q --gif dnull --cast dnull
  hostile "quantize M /dev/null" 0 '' "$BIN" quantize -q M dnull Q8_0
  hostile "synth -o /dev/null" 0 '' "$BIN" synth --shape tiny-llada -o dnull
  hostile "visualizer --gif /dev/null (the check passes; no terminal)" 1 'needs a terminal' "$BIN" -m M --gif dnull
  if [ -c dnull ]; then ok "/dev/null is still a character device"; else fail "/dev/null replaced" "$(ls -l dnull)"; fi
  hostile "record --gif /dev/full: OS reason" 1 "gif: dfull: write failed: No space left on device" \
    "$BIN" record -m M $GEN -q --gif dfull
  hostile "record --cast /dev/full: OS reason" 1 "cast: dfull: write failed: No space left on device" \
    "$BIN" record -m M $GEN -q --cast dfull
  hostile "quantize M /dev/full: OS reason" 1 "dfull: write failed: No space left on device" "$BIN" quantize -q M dfull Q8_0
  hostile "synth -o /dev/full: OS reason" 1 "dfull: write failed: No space left on device" "$BIN" synth --shape tiny-llada -o dfull
  hostile "logits --out /dev/full: OS reason" 1 "^unmask logits: dfull: write failed: No space left on device" \
    "$BIN" logits -m M --tokens 1,2 --out dfull
  if [ -c dfull ]; then ok "/dev/full is still a character device"; else fail "/dev/full replaced" "$(ls -l dfull)"; fi
  hostile "quantize onto a block device: refused" 1 "dblk: is a block device; refusing" "$BIN" quantize -q M dblk Q8_0
  if [ -b dblk ]; then ok "block device node untouched"; else fail "block device node replaced" "$(ls -l dblk)"; fi
  rm -f dnull dfull dblk
else
  rm -f dnull dfull dblk
  skip "device nodes as outputs" "mknod not permitted (needs root)"
fi

# ---------------------------------------------------------------- FIFOs as outputs
hostile "synth -o FIFO without a reader: refused, not waited for" 1 "F: a FIFO with no reader" "$BIN" synth --shape tiny-llada -o F
cat F >fifo.out & reader=$!
hostile "logits --out FIFO with a reader: written in place" 0 '' "$BIN" logits -m M --tokens 1,2 --out F
wait $reader
if [ "$(stat -c %s fifo.out)" = $((2 * 4096 * 4)) ] && [ -p F ]; then ok "FIFO got 2 x 4096 float32, still a FIFO"
else fail "FIFO output" "$(stat -c %s fifo.out) bytes"; fi

# ---------------------------------------------------------------- standard output as the output
printf 'head' >log.bin
timeout 10 "$BIN" logits -m M --tokens 1,2 --out /dev/stdout </dev/null >>log.bin 2>"$TMP/err"; rc=$?
if [ $rc = 0 ] && [ "$(stat -c %s log.bin)" = $((4 + 2 * 4096 * 4)) ] && [ "$(head -c 4 log.bin)" = head ]; then
  ok "--out /dev/stdout >> file: appended through the descriptor"
else fail "--out /dev/stdout >> file" "rc $rc, $(stat -c %s log.bin) bytes: $(cat "$TMP/err")"; fi
n=$(timeout 10 "$BIN" synth --shape tiny-llada -o /dev/stdout 2>/dev/null </dev/null | wc -c)
if [ "$n" -gt 1000000 ]; then ok "synth -o /dev/stdout into a pipe"; else fail "synth -o /dev/stdout | wc" "$n bytes"; fi

# ---------------------------------------------------------------- full disk, and death by signal
(trap '' XFSZ; ulimit -f 64; exec "$BIN" logits -m M --tokens 1,2,3,4,5,6,7,8 --out big.f32) </dev/null 2>"$TMP/err"; rc=$?
if [ $rc = 1 ] && grep -q "big.f32: write failed: File too large" "$TMP/err"; then ok "write error: OS reason"; else fail "write error" "rc $rc: $(cat "$TMP/err")"; fi
if [ ! -e big.f32 ] && [ -z "$(temps_in .)" ]; then ok "write error: no partial file, no temporary"; else fail "write error: leftovers" "$(ls -A)"; fi
{ (ulimit -f 64; exec "$BIN" logits -m M --tokens 1,2,3,4,5,6,7,8 --out big.f32) </dev/null; } 2>/dev/null; rc=$?
if [ $rc = $((128 + 25)) ]; then ok "SIGXFSZ: the process dies of the signal"; else fail "SIGXFSZ exit" "rc $rc"; fi
if [ ! -e big.f32 ] && [ -z "$(temps_in .)" ]; then ok "SIGXFSZ: the handler removed the temporary"; else fail "SIGXFSZ: leftovers" "$(ls -A)"; fi
# a signal record does not handle itself (SIGHUP here) while both temporaries exist: the
# process dies of it (or, where record finishes its files on it, exits 129) and leaves none
if hup_ignored; then
  skip "record SIGHUP" "SIGHUP is ignored in this shell (started under nohup?): it cannot be delivered"
else
"$BIN" record -m M -p hi --gen 200 --steps 200 -q --gif h.gif --cast h.cast </dev/null 2>/dev/null & pid=$!
for _ in $(seq 1 200); do [ "$(temps_in . | wc -l)" -ge 2 ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.05; done
if [ "$(temps_in . | wc -l)" -ge 2 ]; then
  kill -HUP $pid; wait $pid 2>/dev/null; rc=$?
  if [ $rc = 129 ] && [ -z "$(temps_in .)" ]; then ok "record killed by SIGHUP: no temporary files left"
  else fail "record SIGHUP" "rc $rc, left: $(temps_in .)"; fi
else
  wait $pid; skip "record SIGHUP" "the recording ended before its temporary files were seen"
fi
fi
rm -f h.gif h.cast
mkdir small
if mount -t tmpfs -o size=64k tmpfs small 2>/dev/null; then
  hostile "logits --out on a full file system" 1 "small/l.f32: write failed: No space left on device" \
    "$BIN" logits -m M --tokens 1,2,3,4,5,6,7,8,9,10 --out small/l.f32
  hostile "quantize onto a full file system" 1 "small/q.gguf: write failed: No space left on device" \
    "$BIN" quantize -q M small/q.gguf Q8_0
  if [ -z "$(ls -A small)" ]; then ok "full file system: nothing left behind"; else fail "full fs leftovers" "$(ls -A small)"; fi
  umount small
else skip "full file system" "cannot mount a small tmpfs here"; fi

# ---------------------------------------------------------------- special files as inputs
NRF='not a regular file \(a FIFO\)'
hostile "info FIFO" 1 "F: $NRF" "$BIN" info F
hostile "generate -m FIFO" 1 "^unmask generate: F: $NRF" "$BIN" generate -m F -p hi
hostile "tokenize -m FIFO" 1 "F: $NRF" "$BIN" tokenize -m F hello
hostile "logits -m FIFO" 1 "F: $NRF" "$BIN" logits -m F --tokens 1 --out l.f32
hostile "quantize FIFO" 1 "F: $NRF" "$BIN" quantize -q F q.gguf Q8_0
hostile "record -m FIFO" 1 "F: $NRF" "$BIN" record -m F $GEN --gif r.gif
hostile "visualizer -m FIFO: before curses" 1 "^unmask: -m F: $NRF" "$BIN" -m F
printf '[fifo]\npath = F\n' >models.conf
hostile "models.conf path= FIFO: generate" 1 "F: $NRF" "$BIN" generate -M fifo -p hi
hostile "models.conf path= FIFO: visualizer" 1 "F: $NRF" "$BIN" -M fifo
rm models.conf
if [ -p F ]; then ok "the FIFO is still a FIFO"; else fail "FIFO replaced" "$(ls -l F)"; fi
hostile "tokenize -f /dev/zero" 1 "/dev/zero: not a regular file \(a character device\)" "$BIN" tokenize -m M -f /dev/zero
hostile "tokenize -f F (FIFO)" 1 "F: $NRF" "$BIN" tokenize -m M -f F
timeout 10 "$BIN" tokenize -m M -f - </dev/zero >/dev/null 2>"$TMP/err"; rc=$?
if [ $rc = 1 ] && grep -q "standard input: larger than the 16 MiB limit" "$TMP/err"; then ok "tokenize -f - < /dev/zero: size limit"
else fail "tokenize -f - < /dev/zero" "rc $rc: $(cat "$TMP/err")"; fi
hostile "record --theme /dev/zero" 1 "/dev/zero: not a regular file" "$BIN" record -m M $GEN --theme /dev/zero --gif r.gif
hostile "visualizer --theme /dev/zero" 1 "/dev/zero: not a regular file" "$BIN" -m M --theme /dev/zero
head -c 2000000 /dev/zero | tr '\0' '#' >big.theme
hostile "a 2 MB theme: size limit" 1 "big.theme: larger than the 1 MiB limit" "$BIN" record -m M $GEN --theme big.theme --gif r.gif
{ printf '[a]\npath = M\n'; head -c 2000000 /dev/zero | tr '\0' '#'; } >models.conf
hostile "a 2 MB models.conf: size limit" 1 "models.conf: larger than the 1 MiB limit" "$BIN" generate -M a -p hi
rm models.conf
if [ -z "$(temps_in .)" ]; then ok "no temporary files left anywhere"; else fail "temporaries left" "$(temps_in .)"; fi
finish
