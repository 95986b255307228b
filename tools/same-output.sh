#!/usr/bin/env bash
# same-output.sh OLD_BIN NEW_BIN: run `unmask generate --json` with both binaries on the
# bundled model under several fixed settings and compare the output byte for byte, after
# blanking the wall-clock fields (load_s, generate_s, forward_ms, sample_ms), which differ
# run to run. Used to show that a refactoring (issue 15's layout) changed no result. The
# --json keys issue 14 renamed (settings.steps -> steps_requested) or added (steps_run) are
# folded back, so binaries from before and after that change compare on their results; so are
# the keys issue 17 added (settings factor, eb_gamma, cache*; forward_passes, rows_computed,
# cache_bytes; per step rows_computed, cache_refreshed), which name no result.
set -u
old=$1 new=$2
model=${MODEL:-models/unmask-demo.gguf}
strip() { sed -E -e 's/"(load_s|generate_s|forward_ms|sample_ms)":[-0-9.e+]+/"\1":0/g' \
                 -e 's/"steps_requested":/"steps":/' -e 's/,"steps_run":[0-9]+//' \
                 -E -e 's/,"(factor|eb_gamma|cache|cache_type|cache_refresh|cache_drift|forward_passes|rows_computed|cache_bytes|cache_refreshed)":("[^"]*"|[-0-9.e+]+|true|false)//g'; }
rc=0 n=0
while IFS= read -r flags; do
  [ -z "$flags" ] && continue
  n=$((n + 1))
  # shellcheck disable=SC2086
  a=$("$old" generate -m "$model" --json $flags 2>/dev/null | strip)
  # shellcheck disable=SC2086
  b=$("$new" generate -m "$model" --json $flags 2>/dev/null | strip)
  if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "same  $flags"; else echo "DIFF  $flags"; rc=1; fi
done <<'LIST'
-p Once -t 1 --gen 48 --steps 24
-p Once -t 2 --gen 64 --steps 32 --block 16
-p The --gen 40 --steps 40 --eps 0.001 --alg entropy --temp 0.3 --seed 7
-p The --gen 40 --threshold 0.2
-p Hello --gen 32 --steps 16 --alg margin --temp 0.8 --top-k 20 --top-p 0.9 --seed 3
-p Hello --gen 32 --steps 16 --cfg 1.5 --alg random --no-gumbel --temp 0.5
-p Tell --gen 24 --schedule linear --steps 12
LIST
echo "same-output: $n settings, $( [ $rc -eq 0 ] && echo all identical || echo DIFFERENCES )"
exit $rc
