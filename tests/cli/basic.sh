#!/usr/bin/env bash
# basic.sh: the binary's top-level behaviour: --version, --help, unknown commands, and a man
# page section for every command (flags.sh checks each section against the command's --help).
. "$(dirname "$0")/lib.sh"
SUITE=basic

expect_rc version 0 "$BIN" --version
expect_grep version-features '^features: ' "$TMP/out"
# the BF16 product's instruction where the CPU has AVX-512 BF16 (and the ops set is AVX-512), else FMAs
if grep -q '^features: .*avx512bf16' "$TMP/out" && grep -q '^kernels: .*ops avx512 ' "$TMP/out"; then
  expect_grep version-bf16 'bf16 product vdpbf16ps$' "$TMP/out"
else
  expect_grep version-bf16 'bf16 product fma$' "$TMP/out"
fi
if grep -q '^features: .*avx512bf16' "$TMP/out"; then      # the same CPU with the set capped at AVX2
  UNMASK_KERNEL=avx2 "$BIN" --version >"$TMP/out" 2>&1
  expect_grep version-bf16-avx2 'ops avx2 .*bf16 product fma$' "$TMP/out"
fi
expect_grep version-build '^build: .*(CUDA backend|no CUDA)' "$TMP/out"
expect_grep version-gpu '^gpu: ' "$TMP/out"
expect_rc help 0 "$BIN" --help
expect_grep help-lists-info '^  info ' "$TMP/out"
cp "$TMP/out" "$TMP/help"
expect_rc unknown-command 2 "$BIN" frobnicate

# the unit-test runner's watchdog: a test that hangs ends the run within UNIT_TIMEOUT, named
UNIT=${UNMASK_UNIT:-build/release/unit_tests}
if [ -x "$UNIT" ]; then
  UNIT_TIMEOUT=1 UNIT_WATCHDOG_PROBE=1 timeout 30 "$UNIT" harness_watchdog >"$TMP/wd" 2>&1; rc=$?
  if [ $rc = 3 ] && grep -q '^FAIL harness_watchdog: did not finish in 1 s' "$TMP/wd"; then ok "unit watchdog: a hung test fails, named"
  else fail "unit watchdog" "rc $rc: $(head -c 300 "$TMP/wd")"; fi
else
  skip "unit watchdog" "no unit-test binary at $UNIT"
fi
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

# logits --partial A:B: the pass of a cached step (rows A..B-1 against a K/V cache filled by a
# full pass), profiled with the K/V part and the pool's hand-offs; its rows' logits are the full
# pass's up to the F16 rounding of the cached K/V
T40=$(seq -s, 1 40)
expect_rc logits-partial-profile 0 "$BIN" logits -m models/unmask-demo.gguf --tokens "$T40" --reps 3 -t 2 --profile --partial 8:24
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); p = d["profile"]; parts = sum(p["parts_ms"].values())
ok = (d["partial"]["rows"] == 16 and d["partial"]["fill_ms"] > 0 and p["dispatches"] > 0 and p["handoff_ms"] >= 0
      and p["parts_ms"]["k/v cache (f16 store, load)"] > 0 and 0 < p["matmul_ms"] <= parts <= d["forward_ms_median"] + 1e-2)
sys.exit(0 if ok else 1)
PY
then ok logits-partial-profile-parts; else fail logits-partial-profile-parts "$(head -c 600 "$TMP/out")"; fi
expect_rc logits-partial-full 0 "$BIN" logits -m models/unmask-demo.gguf --tokens "$T40" -t 2 --out "$TMP/full.f32"
expect_rc logits-partial-rows 0 "$BIN" logits -m models/unmask-demo.gguf --tokens "$T40" -t 2 --partial 8:24 --out "$TMP/part.f32"
if python3 - "$TMP/full.f32" "$TMP/part.f32" <<'PY'
import struct, sys
full = open(sys.argv[1], "rb").read(); part = open(sys.argv[2], "rb").read()
V = 4096
assert len(full) == 40 * V * 4 and len(part) == 16 * V * 4, (len(full), len(part))
f = struct.unpack(f"{40 * V}f", full)[8 * V:24 * V]; p = struct.unpack(f"{16 * V}f", part)
scale = max(abs(x) for x in f)
worst = max(abs(a - b) for a, b in zip(f, p))
sys.exit(0 if worst <= 1e-3 * scale else 1)
PY
then ok logits-partial-matches-full; else fail logits-partial-matches-full "rows 8..23 differ from the full pass"; fi
expect_rc logits-partial-reversed 2 "$BIN" logits -m models/unmask-demo.gguf --tokens "$T40" --reps 1 --partial 24:8
expect_grep logits-partial-reversed-msg "B must be greater than A" "$TMP/err"
expect_rc logits-partial-past-canvas 2 "$BIN" logits -m models/unmask-demo.gguf --tokens "$T40" --reps 1 --partial 8:41
expect_grep logits-partial-past-canvas-msg "the canvas has 40 tokens" "$TMP/err"
expect_rc logits-partial-not-range 2 "$BIN" logits -m models/unmask-demo.gguf --tokens "$T40" --reps 1 --partial 8
expect_grep logits-partial-not-range-msg "wants A:B" "$TMP/err"
expect_rc logits-partial-gpu 2 "$BIN" logits -m models/unmask-demo.gguf --tokens "$T40" --reps 1 --partial 0:8 --gpu

# man page: a section for every command (that each section lists exactly its command's --help
# flags is tests/cli/flags.sh's check)
cmds=$(awk '/^commands:/{f=1;next} /^$/{f=0} f && /^  [a-z]/{print $1}' "$TMP/help")
missing=""
for c in $cmds; do
  grep -qE "^\.SS $c\b" docs/unmask.1 || missing="$missing section:$c"
done
if [ -z "$missing" ]; then ok man-page-sections; else fail man-page-sections "not in docs/unmask.1:$missing"; fi
finish
