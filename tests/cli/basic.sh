#!/usr/bin/env bash
# basic.sh: the binary's top-level behaviour: --version, --help, unknown commands, and a man
# page section for every command (flags.sh checks each section against the command's --help).
. "$(dirname "$0")/lib.sh"
SUITE=basic

expect_rc version 0 "$BIN" --version
expect_grep version-features '^features: ' "$TMP/out"
expect_grep version-build '^build: .*(CUDA backend|no CUDA)' "$TMP/out"
expect_grep version-gpu '^gpu: ' "$TMP/out"
expect_rc help 0 "$BIN" --help
expect_grep help-lists-info '^  info ' "$TMP/out"
cp "$TMP/out" "$TMP/help"
expect_rc unknown-command 2 "$BIN" frobnicate
expect_grep unknown-command-msg "unknown command 'frobnicate'" "$TMP/err"

# logits --profile: the median pass's parts add up to at most its time, products did MACs
expect_rc logits-profile 0 "$BIN" logits -m models/unmask-demo.gguf --tokens 1,2,3,4,5,6,7,8,9 --reps 3 -t 1 --profile
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); p = d["profile"]; parts = sum(p["parts_ms"].values())
ok = p["macs"] > 0 and 0 < p["matmul_ms"] <= parts <= d["forward_ms_median"] + 1e-2 and len(p["parts_ms"]) >= 10
sys.exit(0 if ok else 1)
PY
then ok logits-profile-adds-up; else fail logits-profile-adds-up "$(head -c 400 "$TMP/out")"; fi
expect_rc logits-profile-needs-reps 2 "$BIN" logits -m models/unmask-demo.gguf --tokens 1,2 --out /dev/null --profile
expect_grep logits-profile-needs-reps-msg "needs --reps" "$TMP/err"

# man page: a section for every command (that each section lists exactly its command's --help
# flags is tests/cli/flags.sh's check)
cmds=$(awk '/^commands:/{f=1;next} /^$/{f=0} f && /^  [a-z]/{print $1}' "$TMP/help")
missing=""
for c in $cmds; do
  grep -qE "^\.SS $c\b" docs/unmask.1 || missing="$missing section:$c"
done
if [ -z "$missing" ]; then ok man-page-sections; else fail man-page-sections "not in docs/unmask.1:$missing"; fi
finish
