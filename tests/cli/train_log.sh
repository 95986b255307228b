#!/usr/bin/env bash
# train_log.sh: `unmask-train train --log` writes through the output module (issue 25): a fresh
# run writes the header and a line per evaluation; a resumed run keeps the old lines and adds
# its own (the header once); a write that fails (/dev/full) stops the run with the OS reason;
# a run that ends early (SIGTERM) leaves an existing log byte for byte as it was and no
# temporary file (the old trainer opened it with fopen "a" and appended at once).
. "$(dirname "$0")/lib.sh"
SUITE=train_log
TRAIN=${UNMASK_TRAIN:-build/release/unmask-train}
case "$TRAIN" in /*) ;; *) TRAIN=$PWD/$TRAIN ;; esac
TOK=$PWD/models/unmask-demo.gguf
if [ ! -x "$TRAIN" ] || [ ! -f "$TOK" ]; then skip "train --log" "no $TRAIN or $TOK (make trainer demo-model)"; finish; exit 0; fi
head -c 30000 data/corpus/tiny_shakespeare.txt >"$TMP/train.txt"
ARGS=(--batch 2 --eval-every 2 --embd 32 --layers 1 --heads 2 --ffn 64 --ctx 32 --threads 1)
cd "$TMP" || exit 1

"$TRAIN" train --tok "$TOK" --ckpt ck.bin --log log.tsv --steps 4 "${ARGS[@]}" train.txt >out 2>err; rc=$?
if [ $rc = 0 ] && [ "$(head -1 log.tsv | cut -f1-3)" = "$(printf 'step\tlr\ttrain_loss')" ] && [ "$(wc -l <log.tsv)" = 3 ] &&
   [ "$(cut -f1 log.tsv | tail -2 | tr '\n' ' ')" = "2 4 " ]; then ok "fresh run: header and steps 2, 4"
else fail "fresh run" "rc $rc $(cat err | tail -2) $(cat log.tsv 2>/dev/null)"; fi
cp log.tsv log.first
"$TRAIN" train --tok "$TOK" --ckpt ck.bin --log log.tsv --steps 8 "${ARGS[@]}" train.txt >out 2>err; rc=$?
if [ $rc = 0 ] && [ "$(head -3 log.tsv)" = "$(cat log.first)" ] && [ "$(cut -f1 log.tsv | tail -n +2 | tr '\n' ' ')" = "2 4 6 8 " ] &&
   [ "$(grep -c '^step' log.tsv)" = 1 ]; then ok "resumed run: old lines kept, 6 and 8 added, one header"
else fail "resumed run" "rc $rc $(tail -2 err) $(cat log.tsv)"; fi
if [ -z "$(temps_in .)" ]; then ok "no temporary file left"; else fail "no temporary file left" "$(temps_in .)"; fi

"$TRAIN" train --tok "$TOK" --ckpt ck2.bin --log /dev/full --steps 4 "${ARGS[@]}" train.txt >out 2>err; rc=$?
if [ $rc != 0 ] && grep -q "No space left on device" err; then ok "--log /dev/full: the failed write stops the run, with the reason"
else fail "--log /dev/full" "rc $rc: $(cat err)"; fi

printf 'OLD LOG\n' >old.tsv
"$TRAIN" train --tok "$TOK" --ckpt ck3.bin --log old.tsv --steps 100000000 "${ARGS[@]}" train.txt >out 2>err &
pid=$!
for ((k = 0; k < 100; k++)); do grep -q '^step 2 ' err 2>/dev/null && break; sleep 0.05; done
kill -TERM $pid 2>/dev/null; wait $pid
if [ "$(cat old.tsv)" = "OLD LOG" ]; then ok "a run ended early: the existing log as it was"
else fail "a run ended early: the existing log" "$(head -3 old.tsv)"; fi
if [ -z "$(temps_in .)" ]; then ok "a run ended early: no temporary file"; else fail "a run ended early: temporaries" "$(temps_in .)"; fi
finish
