#!/usr/bin/env bash
# outputs.sh: nothing lost, nothing silent (issue 25, points 1, 2, 3 and 8), for every command.
#  - standard output on /dev/full and closed: every command that prints exits 1 with
#    "writing to standard output failed: REASON" (the commands that print nothing exit 0);
#  - outputs through symbolic links (dangling, and to an existing file): written where the
#    link leads, the link kept, for every command that writes files;
#  - full disks (a small tmpfs; skipped with the reason where mount is not allowed): every
#    command that writes files fails with the OS reason, leaves no temporary and keeps the
#    old file; `split` over an existing set keeps the whole old set when the disk fills in
#    its last part.
SUITE=outputs
. "$(dirname "$0")/lib.sh"
ROOT=${UNMASK_ROOT:-$PWD}
M=$ROOT/models/unmask-demo.gguf
tiny=$ROOT/tests/data/tiny-llada.gguf
cd "$TMP" || exit 1
printf '{"prompt": "hi", "answer": "x"}\n{"prompt": "ho", "answer": "y"}\n' >tasks.jsonl
printf '[demo]\npath = %s\n' "$M" >models.conf
G=(-p hi --gen 8 --steps 4)

# ---------------------------------------------------------------- standard output
# every command that prints something; NAME|ARGS (word-split)
printing=(
  "--help|--help" "--version|--version" "--ui-help|--ui-help" "--list-models|--list-models"
  "info|info $M" "info --json|info --json $M"
  "generate|generate -m $M ${G[*]} -q" "generate --json|generate -m $M ${G[*]} -q --json"
  "generate --stream-json|generate -m $M ${G[*]} -q --stream-json"
  "eval|eval -m $M tasks.jsonl --gen 8 --steps 4 -q" "eval --json|eval -m $M tasks.jsonl --gen 8 --steps 4 -q --json"
  "tokenize|tokenize -m $M hello" "tokenize --ids-only|tokenize -m $M --ids-only hello"
  "logits --reps|logits -m $M --tokens 1,2 --reps 2" "split --dry-run|split --dry-run $M sp" "split|split $M sp"
)
for c in info generate eval logits synth tokenize record quantize split; do printing+=("$c --help|$c --help"); done
for entry in "${printing[@]}"; do
  name=${entry%%|*}; args=${entry#*|}
  # shellcheck disable=SC2086
  "$BIN" $args >/dev/full 2>err </dev/null; rc=$?
  if [ $rc = 1 ] && grep -q "writing to standard output failed: No space left on device$" err; then ok "$name > /dev/full: exit 1, says so"
  else fail "$name > /dev/full" "exit $rc: $(head -c 300 err)"; fi
  # shellcheck disable=SC2086
  "$BIN" $args >&- 2>err </dev/null; rc=$?
  if [ $rc = 1 ] && grep -qE "(writing to standard output failed: Bad file descriptor|standard output is closed)$" err
  then ok "$name with stdout closed: exit 1, says so"; else fail "$name >&-" "exit $rc: $(head -c 300 err)"; fi
done
rm -f sp-*.gguf
# the commands whose product is a file print nothing: stdout lost is nothing lost
for entry in "quantize -q|quantize -q $tiny q.gguf Q8_0" "synth|synth --shape tiny-llada -o s.gguf" \
             "record -q|record -m $M ${G[*]} -q --gif r.gif" "logits --out|logits -m $M --tokens 1,2 --out l.f32"; do
  name=${entry%%|*}; args=${entry#*|}
  # shellcheck disable=SC2086
  "$BIN" $args >/dev/full 2>err </dev/null; rc=$?
  if [ $rc = 0 ]; then ok "$name > /dev/full: prints nothing, exit 0"; else fail "$name > /dev/full" "exit $rc: $(cat err)"; fi
done
rm -f q.gguf s.gguf r.gif l.f32
# a run that prints as it goes says it once, from where it stopped
for i in $(seq 1 40); do printf '{"prompt": "p%d", "answer": "x"}\n' "$i"; done >many.jsonl
"$BIN" eval -m "$M" many.jsonl --gen 8 --steps 4 -q >/dev/full 2>err; rc=$?
if [ $rc = 1 ] && [ "$(grep -c 'writing to standard output failed' err)" = 1 ]; then ok "eval of 40 tasks > /dev/full: exit 1, one message"
else fail "eval of 40 tasks > /dev/full" "exit $rc: $(cat err)"; fi

# ---------------------------------------------------------------- symbolic links
# writers NAME|ARGS with OUT standing for the output path
writers=(
  "logits --out|logits -m $M --tokens 1,2 --out OUT" "quantize|quantize -q $tiny OUT Q8_0"
  "synth -o|synth --shape tiny-llada -o OUT" "record --gif|record -m $M ${G[*]} -q --gif OUT"
  "record --cast|record -m $M ${G[*]} -q --cast OUT"
)
mkdir -p dir
for entry in "${writers[@]}"; do
  name=${entry%%|*}; args=${entry#*|}
  rm -f dir/target link
  ln -s dir/target link                               # dangling: the target is created
  # shellcheck disable=SC2086
  "$BIN" ${args//OUT/link} 2>err </dev/null; rc=$?
  if [ $rc = 0 ] && [ -L link ] && [ -f dir/target ] && [ -s dir/target ]; then ok "$name through a dangling link: the target written, the link kept"
  else fail "$name through a dangling link" "exit $rc: $(ls -l link dir 2>&1 | tr '\n' ' ') $(cat err)"; fi
  echo old >dir/target                                # existing: replaced where the link leads
  # shellcheck disable=SC2086
  "$BIN" ${args//OUT/link} 2>err </dev/null; rc=$?
  if [ $rc = 0 ] && [ -L link ] && [ "$(readlink link)" = dir/target ] && [ "$(head -c 4 dir/target)" != "old" ]; then
    ok "$name through a link to a file: that file replaced, the link kept"
  else fail "$name through a link to a file" "exit $rc: $(ls -l link 2>&1) $(cat err)"; fi
  if [ -z "$(temps_in .)$(temps_in dir)" ]; then ok "$name: no temporary left"; else fail "$name: temporaries" "$(temps_in . dir)"; fi
done
rm -f link dir/target
ln -s dir/sp sp                                       # split: PREFIX's parts are new names beside it
"$BIN" split -q --split-max-tensors 10 "$tiny" sp 2>err; rc=$?
if [ $rc = 0 ] && [ -f sp-00001-of-00002.gguf ] && [ -L sp ]; then ok "split: parts named from a prefix that is a link"
else fail "split with a linked prefix" "exit $rc $(cat err)"; fi
rm -f sp sp-*.gguf
for i in 1 2; do ln -s "dir/part$i" "lp-0000$i-of-00002.gguf"; done   # the parts themselves dangling links
"$BIN" split -q --split-max-tensors 10 "$tiny" lp 2>err; rc=$?
if [ $rc = 0 ] && [ -L lp-00001-of-00002.gguf ] && [ -f dir/part1 ] && [ -f dir/part2 ] && "$BIN" info lp-00001-of-00002.gguf >/dev/null
then ok "split: parts through dangling links written where they lead, a set that opens"
else fail "split parts through links" "exit $rc $(cat err) $(ls -l dir)"; fi
rm -f lp-* dir/part*

# ---------------------------------------------------------------- full disks
mkdir small
if ! mount -t tmpfs -o size=4600k tmpfs small 2>/dev/null; then
  skip "full disks" "cannot mount a small tmpfs here (needs root and mount permission)"
  finish; exit 0
fi
trap 'umount "$TMP/small" 2>/dev/null; rm -rf "$TMP"' EXIT
fill() { head -c "$1" /dev/zero >small/fill 2>/dev/null; }   # leave about what the test needs
full_case() {  # full_case NAME FREE ARGS (OUT = small/out): fails with the reason, old file kept
  local name=$1 free=$2 args=$3
  rm -f small/*; echo old-bytes >small/out
  local avail; avail=$(( $(stat -f -c '%a * %S' small) ))
  fill $((avail - free))
  # shellcheck disable=SC2086
  "$BIN" ${args//OUT/small/out} >/dev/null 2>err </dev/null; local rc=$?
  if [ $rc = 1 ] && grep -q "small/out: write failed: No space left on device" err; then ok "$name on a full disk: exit 1, the OS reason"
  else fail "$name on a full disk" "exit $rc: $(head -c 300 err)"; fi
  if [ "$(cat small/out)" = old-bytes ] && [ -z "$(temps_in small)" ]; then ok "$name on a full disk: the old file kept, no temporary"
  else fail "$name on a full disk: leftovers" "$(ls -A small) $(head -c 20 small/out)"; fi
}
for entry in "${writers[@]}"; do full_case "${entry%%|*}" 4096 "${entry#*|}"; done
# the visualizer's recordings (--gif, --cast) need a terminal: a private tmux server
if command -v tmux >/dev/null 2>&1; then
  . "$ROOT/tests/cli/tmuxlib.sh"
  tmux_begin outputs "visualizer outputs"
  trap 'T kill-server 2>/dev/null; umount "$TMP/small" 2>/dev/null; rm -rf "$TMP"' EXIT
  viz() {  # viz ARGS...: the demo model's run to its end, then q; sets vrc and verr
    T kill-session -t ui 2>/dev/null; rm -f vrc
    T new-session -d -s ui -x 100 -y 30 "cd $TMP; $RUN $BIN -m $M ${G[*]} $* 2>$TMP/verr; echo \$? >$TMP/vrc"
    wait_for sh -c "tmux -u -L $SOCK -f $TMP/tmux.conf capture-pane -p -t ui | tail -1 | grep -q DONE"
    T send-keys -t ui q
    wait_for test -s vrc; vrc=$(cat vrc 2>/dev/null); verr=$(cat verr 2>/dev/null)
  }
  rm -f small/*; echo old-bytes >small/out; avail=$(( $(stat -f -c '%a * %S' small) )); fill $((avail - 4096))
  viz --gif small/out
  if [ "$vrc" = 1 ] && grep -q "small/out: write failed: No space left on device" <<<"$verr" && [ "$(cat small/out)" = old-bytes ] &&
     [ -z "$(temps_in small)" ]; then ok "visualizer --gif on a full disk: exit 1, the reason, old file kept, no temporary"
  else fail "visualizer --gif on a full disk" "rc $vrc: $verr; $(ls -A small)"; fi
  rm -f small/* dir/vt.cast; ln -sfn dir/vt.cast vlink
  viz --cast vlink
  if [ "$vrc" = 0 ] && [ -L vlink ] && [ -s dir/vt.cast ]; then ok "visualizer --cast through a dangling link: the target written, the link kept"
  else fail "visualizer --cast through a link" "rc $vrc: $verr $(ls -l vlink dir)"; fi
else
  skip "visualizer outputs" "tmux not installed"
fi

# split over an existing set: the disk fills in the last part; the old set stays whole
rm -f small/*
"$BIN" split -q --split-max-tensors 10 "$tiny" small/m 2>err || fail "split: the old set" "$(cat err)"
sha_old=$(cat small/m-0000*-of-00002.gguf | sha256sum)
"$BIN" split -q --split-max-tensors 30 "$M" small/m 2>err; rc=$?      # parts of 4.2 MB and 0.9 MB
if [ $rc = 1 ] && grep -q "m-00002-of-00002.gguf: write failed: No space left on device" err && grep -q "nothing written" err
then ok "split over a set, disk full in the last part: exit 1, names the part and says nothing was written"
else fail "split full in the last part" "exit $rc: $(cat err)"; fi
if [ "$(cat small/m-0000*-of-00002.gguf | sha256sum)" = "$sha_old" ] && [ -z "$(temps_in small)" ] &&
   "$BIN" info small/m-00001-of-00002.gguf >/dev/null 2>&1; then ok "split full in the last part: the old set byte for byte, opens, no temporary"
else fail "split: the old set changed" "$(ls -la small)"; fi
"$BIN" split -q --split-max-tensors 10 "$tiny" small/n 2>err && ok "split afterwards: the space is free again" || fail "split after" "$(cat err)"
T kill-server 2>/dev/null
umount small && trap 'rm -rf "$TMP"' EXIT
finish
