#!/usr/bin/env bash
# layout.sh: the layer folders keep their one-way dependencies (docs/architecture.md).
# tools/check-layout.py passes on the tree as built; on a copy of the tree it fails, naming
# the file, when a low layer includes a header from above (and the Makefile's per-layer -I
# paths make the same include a compile error), and when a kernel calls back into the
# dispatcher that calls it (a cycle read from the objects' symbols), and when a hand-written
# file grows over 900 lines.
. "$(dirname "$0")/lib.sh"
SUITE=layout
V=${UNMASK_VARIANT:-release}
OBJS=build/$V

if python3 tools/check-layout.py --objs "$OBJS" >"$TMP/log" 2>&1; then ok "check-layout passes on the tree"
else fail "check-layout passes on the tree" "$(head -5 "$TMP/log")"; fi

# a copy of the sources (and the objects, for the symbol check)
T=$TMP/tree
mkdir -p "$T"
cp -r Makefile src kernels ui data tools "$T"/
(find "$OBJS" -name '*.o' -path "$OBJS/src/*"; find "$OBJS" -name '*.o' -path "$OBJS/kernels/*";
 find "$OBJS" -name '*.o' -path "$OBJS/ui/*"; find "$OBJS" -name '*.o' -path "$OBJS/generated/*") |
  while read -r o; do mkdir -p "$T/$(dirname "$o")"; cp -p "$o" "$T/$o"; done

# 1. an upward include: the base layer reaching up to the decode layer
cp "$T/src/base/util.c" "$TMP/util.c.orig"
printf '#include "engine.h"\n' >> "$T/src/base/util.c"
python3 "$T/tools/check-layout.py" --root "$T" --skip-objects >"$TMP/log" 2>&1; rc=$?
[ $rc -eq 1 ] && ok "upward include: check-layout fails" || fail "upward include: check-layout fails" "exit $rc"
expect_grep "upward include: names the file, the header and the layer" \
  'src/base/util\.c:[0-9]+: includes "engine\.h" from src/decode, a layer above src/base' "$TMP/log"
if make -s -C "$T" VARIANT=layoutcheck build/layoutcheck/src/base/util.o >"$TMP/cc" 2>&1; then
  fail "upward include: does not compile with the layer's -I paths" "it compiled"
else expect_grep "upward include: does not compile with the layer's -I paths" 'engine\.h: No such file' "$TMP/cc"; fi
cp "$TMP/util.c.orig" "$T/src/base/util.c"

# 2. a grab-bag: a hand-written file over 900 lines
seq 901 | sed 's|^|/* line |; s|$| */|' > "$T/src/base/bag.c"
python3 "$T/tools/check-layout.py" --root "$T" --skip-objects >"$TMP/log" 2>&1; rc=$?
[ $rc -eq 1 ] && ok "file over 900 lines: check-layout fails" || fail "file over 900 lines: check-layout fails" "exit $rc"
expect_grep "file over 900 lines: names it" 'src/base/bag\.c: 901 lines, over 900' "$TMP/log"
rm -f "$T/src/base/bag.c"

# 3. a call back into the dispatcher: the AVX2 kernel calling matmul.c
printf '\nconst char *mm_probe_avx2(void);\nconst char *mm_probe_avx2(void) { return matmul_kernel_name(UM_KERNEL_AVX2); }\n' \
  >> "$T/kernels/cpu/arch/x86/matmul_avx2.c"
if make -s -C "$T" VARIANT="$V" "$OBJS/kernels/cpu/arch/x86/matmul_avx2.o" >"$TMP/cc" 2>&1; then
  python3 "$T/tools/check-layout.py" --root "$T" --objs "$T/$OBJS" >"$TMP/log" 2>&1; rc=$?
  [ $rc -eq 1 ] && ok "call into the dispatcher: check-layout fails" || fail "call into the dispatcher: check-layout fails" "exit $rc"
  expect_grep "call into the dispatcher: names the cycle and the symbol" \
    'cycle between objects: .*kernels/cpu/arch/x86/matmul_avx2\.o -> kernels/cpu/matmul\.o \(matmul_kernel_name\)' "$TMP/log"
else
  fail "call into the dispatcher: the changed kernel compiles" "$(head -5 "$TMP/cc")"
fi
cp kernels/cpu/arch/x86/matmul_avx2.c "$T/kernels/cpu/arch/x86/matmul_avx2.c"   # undo 3
make -s -C "$T" VARIANT="$V" "$OBJS/kernels/cpu/arch/x86/matmul_avx2.o" >/dev/null 2>&1

# 4. an instruction-set file calling another sideways (the AMX kernel once fell back on the
#    AVX-512 kernel itself; the dispatcher chooses that now)
printf '\nvoid mm_probe_amx(const mm_job *j);\nvoid mm_probe_amx(const mm_job *j) { mm_chunk_avx512(j, 0, 0, 0, 0); }\n' \
  >> "$T/kernels/cpu/arch/x86/matmul_amx.c"
if make -s -C "$T" VARIANT="$V" "$OBJS/kernels/cpu/arch/x86/matmul_amx.o" >"$TMP/cc" 2>&1; then
  python3 "$T/tools/check-layout.py" --root "$T" --objs "$T/$OBJS" >"$TMP/log" 2>&1; rc=$?
  [ $rc -eq 1 ] && ok "sideways call between instruction-set files: check-layout fails" ||
    fail "sideways call between instruction-set files: check-layout fails" "exit $rc"
  expect_grep "sideways call: names both files and the symbol" \
    'kernels/cpu/arch/x86/matmul_amx\.o calls mm_chunk_avx512 in kernels/cpu/arch/x86/matmul_avx512\.o sideways' "$TMP/log"
else
  fail "sideways call: the changed kernel compiles" "$(head -5 "$TMP/cc")"
fi
# plain `make` builds the program (a rule for a generated file once became the default goal)
goal=$(make -pn -f Makefile 2>/dev/null | sed -n 's/^\.DEFAULT_GOAL := //p' | tail -1)
[ "$goal" = all ] && ok "plain make builds all" || fail "plain make builds all" "default goal '$goal'"
finish
