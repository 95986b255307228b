#!/usr/bin/env bash
# split.sh: split models (llama.cpp's gguf-split layout) end to end on the bundled model:
# `unmask split` into 2 and 3 parts; generate from the first part, from another part's name
# and from the unsplit file gives the same text; info lists the parts; a missing part, a part
# of another split, a renamed part and a truncated part each fail with one line naming it;
# no input is ever modified; outputs never overwrite an input. Where llama.cpp's
# llama-gguf-split is built (build/peer/bin, or $UNMASK_GGUF_SPLIT), its parts must equal
# unmask's byte for byte and open in unmask; otherwise those checks are skipped.
SUITE=split
. "$(dirname "$0")/lib.sh"
M=models/unmask-demo.gguf
D=$TMP/parts
mkdir -p "$D"
GEN=(-t 2 -p "Once upon a time" --no-chat --gen 32 --steps 16 --seed 7 -q)
sum() { md5sum "$@" | cut -d' ' -f1; }
sum_in=$(sum "$M")

expect_rc help 0 "$BIN" split --help
expect_grep help-flags '--split-max-size' "$TMP/out"

# ---------------------------------------------------------------- writing parts
expect_rc split-2 0 "$BIN" split --split-max-tensors 20 "$M" "$D/two"
expect_grep split-2-says "wrote $D/two-00002-of-00002.gguf \(part 2 of 2\)" "$TMP/out"
if [ -f "$D/two-00001-of-00002.gguf" ] && [ -f "$D/two-00002-of-00002.gguf" ] && [ "$(ls "$D" | wc -l)" -eq 2 ]
then ok split-2-files; else fail split-2-files "$(ls -A "$D")"; fi
expect_rc split-3 0 "$BIN" split -q --split-max-size 2M "$M" "$D/three"
if [ "$(ls "$D"/three-0000?-of-00003.gguf 2>/dev/null | wc -l)" -eq 3 ]; then ok split-3-files; else fail split-3-files "$(ls -A "$D")"; fi
# the parts hold the model's tensor bytes and nothing else lost: the sizes add up to the
# model plus one header per extra part (checked loosely: more than the model, less than twice)
total=$(cat "$D"/three-*.gguf | wc -c); orig=$(wc -c <"$M")
if [ "$total" -gt "$orig" ] && [ "$total" -lt $((orig * 2)) ]; then ok split-3-sizes; else fail split-3-sizes "$total vs $orig"; fi
expect_rc dry-run 0 "$BIN" split --dry-run --split-max-size 2M "$M" "$D/dry"
expect_grep dry-run-plan '^3 parts$' "$TMP/out"
if ls "$D"/dry* >/dev/null 2>&1; then fail dry-run-writes-nothing "$(ls "$D")"; else ok dry-run-writes-nothing; fi

# ---------------------------------------------------------------- same generations
"$BIN" generate -m "$M" "${GEN[@]}" >"$TMP/g0" 2>&1
[ -s "$TMP/g0" ] && ok generate-unsplit || fail generate-unsplit "empty output"
for f in two-00001-of-00002 two-00002-of-00002 three-00001-of-00003 three-00002-of-00003 three-00003-of-00003; do
  "$BIN" generate -m "$D/$f.gguf" "${GEN[@]}" >"$TMP/g1" 2>&1
  if cmp -s "$TMP/g0" "$TMP/g1"; then ok "generate-from-$f"; else fail "generate-from-$f" "$(head -c 300 "$TMP/g1")"; fi
done
# logits too, bit for bit
"$BIN" logits -m "$M" --tokens 1,2,3,4,5 --out "$TMP/l0.f32" -t 1 2>/dev/null
"$BIN" logits -m "$D/three-00002-of-00003.gguf" --tokens 1,2,3,4,5 --out "$TMP/l1.f32" -t 1 2>/dev/null
if [ -s "$TMP/l0.f32" ] && cmp -s "$TMP/l0.f32" "$TMP/l1.f32"; then ok logits-identical; else fail logits-identical; fi

# ---------------------------------------------------------------- info
expect_rc info-part2 0 "$BIN" info "$D/three-00002-of-00003.gguf"
expect_grep info-parts-heading '^parts \(split model, 3 files\)$' "$TMP/out"
for i in 1 2 3; do
  expect_grep "info-lists-part-$i" "^  $D/three-0000$i-of-00003.gguf  $(wc -c <"$D/three-0000$i-of-00003.gguf") bytes, [0-9]+ tensors$" "$TMP/out"
done
expect_grep info-runnable '^runnable: yes$' "$TMP/out"
expect_grep info-all-tensors ", 38 tensors, " "$TMP/out"
expect_rc info-json 0 "$BIN" info --json "$D/three-00003-of-00003.gguf"
if python3 - "$TMP/out" "$D" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1])); D = sys.argv[2]
parts = d["parts"]
assert [p["path"] for p in parts] == [f"{D}/three-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
assert all(p["bytes"] == os.path.getsize(p["path"]) for p in parts)
assert sum(p["n_tensors"] for p in parts) == len(d["tensors"]) == 38 and d["runnable"]
assert [sum(1 for t in d["tensors"] if t["part"] == i) for i in range(3)] == [p["n_tensors"] for p in parts]
PY
then ok info-json-parts; else fail info-json-parts; fi
expect_rc info-plain 0 "$BIN" info "$M"
if grep -q '^parts' "$TMP/out"; then fail info-plain-no-parts; else ok info-plain-no-parts; fi

# ---------------------------------------------------------------- broken sets
sums_before=$(sum "$D"/*)
mv "$D/three-00002-of-00003.gguf" "$TMP/held"
expect_rc missing-part 1 "$BIN" generate -m "$D/three-00001-of-00003.gguf" "${GEN[@]}"
expect_grep missing-part-names-path "part 2 of 3 of the split model .*: $D/three-00002-of-00003.gguf: No such file" "$TMP/err"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && ok missing-part-one-line || fail missing-part-one-line "$(cat "$TMP/err")"
expect_rc missing-part-info 1 "$BIN" info "$D/three-00003-of-00003.gguf"
expect_grep missing-part-info-msg "$D/three-00002-of-00003.gguf: No such file" "$TMP/err"
mv "$TMP/held" "$D/three-00002-of-00003.gguf"
# a part of another split put in place of part 2 (its split.count is 2)
mkdir -p "$TMP/mix"
cp "$D"/three-*.gguf "$TMP/mix/"
cp "$D/two-00002-of-00002.gguf" "$TMP/mix/three-00002-of-00003.gguf"
expect_rc other-split 1 "$BIN" info "$TMP/mix/three-00001-of-00003.gguf"
expect_grep other-split-msg "three-00002-of-00003.gguf: split.count is 2, but .* says 3 \(a part of another split\?\)" "$TMP/err"
# a renamed part
cp "$D/three-00002-of-00003.gguf" "$TMP/mix/renamed.gguf"
expect_rc renamed-part 1 "$BIN" generate -m "$TMP/mix/renamed.gguf" "${GEN[@]}"
expect_grep renamed-part-msg "renamed.gguf: part 2 of a 3-part split model, but its name does not end in -00002-of-00003.gguf" "$TMP/err"
# a link named otherwise finds the parts where it points (the name there is right)
ln -s "$D/three-00002-of-00003.gguf" "$TMP/mix/alias.gguf"
"$BIN" generate -m "$TMP/mix/alias.gguf" "${GEN[@]}" >"$TMP/g1" 2>&1
cmp -s "$TMP/g0" "$TMP/g1" && ok link-to-part || fail link-to-part "$(head -c 300 "$TMP/g1")"
# a truncated part
cp "$D"/three-*.gguf "$TMP/mix/"
head -c 100000 "$D/three-00003-of-00003.gguf" >"$TMP/mix/three-00003-of-00003.gguf"
expect_rc truncated-part 1 "$BIN" generate -m "$TMP/mix/three-00001-of-00003.gguf" "${GEN[@]}"
expect_grep truncated-part-msg "part 3 of 3 of the split model .*three-00003-of-00003.gguf: tensor '.*': data .* ends past end of file" "$TMP/err"
[ "$(sum "$D"/*)" = "$sums_before" ] && ok broken-sets-modify-nothing || fail broken-sets-modify-nothing

# ---------------------------------------------------------------- outputs and inputs
# splitting a split model (opened from any part) gives the same parts as splitting the original
mkdir -p "$TMP/re"
expect_rc resplit 0 "$BIN" split -q --split-max-tensors 20 "$D/three-00003-of-00003.gguf" "$TMP/re/two"
if cmp -s "$TMP/re/two-00001-of-00002.gguf" "$D/two-00001-of-00002.gguf" &&
   cmp -s "$TMP/re/two-00002-of-00002.gguf" "$D/two-00002-of-00002.gguf"; then ok resplit-same-bytes; else fail resplit-same-bytes; fi
# an output part that is an input part is refused before anything is written
expect_rc refuses-input 1 "$BIN" split --split-max-size 2M "$D/three-00002-of-00003.gguf" "$D/three"
expect_grep refuses-input-msg "is the same file as the input IN.gguf .*refusing to overwrite an input" "$TMP/err"
ln -s "$D/two-00001-of-00002.gguf" "$TMP/link.gguf"
expect_rc refuses-input-via-link 1 "$BIN" split --split-max-tensors 20 "$TMP/link.gguf" "$D/two"
[ "$(sum "$D"/*)" = "$sums_before" ] && ok outputs-modify-no-input || fail outputs-modify-no-input
mkdir -p "$TMP/dir-00001-of-00002.gguf"
expect_rc refuses-directory 1 "$BIN" split --split-max-tensors 20 "$M" "$TMP/dir"
if [ -z "$(temps_in "$D")" ] && [ -z "$(temps_in "$TMP")" ]; then ok no-temporaries-left; else fail no-temporaries-left; fi
# quantizing from a split model writes a plain file, the same as from the unsplit model
expect_rc quantize-from-part 0 "$BIN" quantize -q "$D/three-00002-of-00003.gguf" "$TMP/q1.gguf" Q8_0
"$BIN" quantize -q "$M" "$TMP/q0.gguf" Q8_0 >/dev/null 2>&1
cmp -s "$TMP/q0.gguf" "$TMP/q1.gguf" && ok quantize-from-part-same-bytes || fail quantize-from-part-same-bytes
[ "$(sum "$M")" = "$sum_in" ] && ok model-unmodified || fail model-unmodified
# the other commands refuse to write over ANOTHER part of the split they read (gguf_open reads
# every part): quantize, logits --out and record --cast, opened from part 1, writing part 2
P2="$D/three-00002-of-00003.gguf"
expect_rc quantize-over-other-part 1 "$BIN" quantize -q "$D/three-00001-of-00003.gguf" "$P2" Q8_0
expect_grep quantize-over-other-part-msg "OUT.gguf .*three-00002-of-00003.gguf: is the same file as the input IN.gguf \(its part 2 of 3\)" "$TMP/err"
expect_rc logits-over-other-part 1 "$BIN" logits -m "$D/three-00001-of-00003.gguf" --tokens 1,2 --out "$P2"
expect_grep logits-over-other-part-msg "its part 2 of 3" "$TMP/err"
ln -s "$D/three-00003-of-00003.gguf" "$TMP/p3link.gguf"
expect_rc record-over-other-part-via-link 1 "$BIN" record -m "$TMP/p3link.gguf" -p hi --gen 8 --steps 4 --cast "$P2"
expect_grep record-over-other-part-msg "its part 2 of 3" "$TMP/err"
[ "$(sum "$D"/*)" = "$sums_before" ] && ok other-parts-unmodified || fail other-parts-unmodified

# ---------------------------------------------------------------- bad usage
expect_rc both-modes 2 "$BIN" split --split-max-tensors 2 --split-max-size 2M "$M" "$TMP/u"
expect_grep both-modes-msg 'not both' "$TMP/err"
expect_rc zero-tensors 2 "$BIN" split --split-max-tensors 0 "$M" "$TMP/u"
expect_rc bad-size 2 "$BIN" split --split-max-size 2X "$M" "$TMP/u"
expect_rc bad-size-unit-only 2 "$BIN" split --split-max-size M "$M" "$TMP/u"
expect_rc no-prefix 2 "$BIN" split "$M"
expect_rc too-small 1 "$BIN" split --split-max-size 1M "$M" "$TMP/u"
expect_grep too-small-msg "a part would hold no tensor: tensor 'token_embd.weight'" "$TMP/err"
expect_rc not-gguf 1 "$BIN" split README.md "$TMP/u"
if ls "$TMP"/u-* >/dev/null 2>&1; then fail failures-write-nothing; else ok failures-write-nothing; fi

# ---------------------------------------------------------------- llama.cpp's gguf-split
GS=${UNMASK_GGUF_SPLIT:-build/peer/bin/llama-gguf-split}
if [ -x "$GS" ]; then
  mkdir -p "$TMP/ref"
  for opt in "--split-max-tensors 20" "--split-max-tensors 13" "--split-max-size 2M"; do
    tag=$(echo "$opt" | tr -dc 'a-z0-9')
    # shellcheck disable=SC2086
    "$GS" $opt "$M" "$TMP/ref/$tag" >/dev/null 2>&1
    # shellcheck disable=SC2086
    "$BIN" split -q $opt "$M" "$TMP/ref/mine-$tag"
    n=0 same=0
    for f in "$TMP/ref/$tag"-*.gguf; do
      n=$((n + 1)); cmp -s "$f" "$TMP/ref/mine-${f#"$TMP/ref/"}" && same=$((same + 1))
    done
    [ "$n" -ge 2 ] && [ "$n" -eq "$same" ] && [ "$(ls "$TMP/ref/mine-$tag"-* | wc -l)" -eq "$n" ] \
      && ok "gguf-split-same-bytes $opt" || fail "gguf-split-same-bytes $opt" "$same of $n parts equal"
    last=$(ls "$TMP/ref/$tag"-*.gguf | tail -1)
    "$BIN" generate -m "$last" "${GEN[@]}" >"$TMP/g1" 2>&1
    cmp -s "$TMP/g0" "$TMP/g1" && ok "gguf-split-parts-generate $opt" || fail "gguf-split-parts-generate $opt" "$(head -c 300 "$TMP/g1")"
  done
else
  skip gguf-split-same-bytes "no $GS (tools/build-peer.sh builds it)"
  skip gguf-split-parts-generate "no $GS"
fi
finish
