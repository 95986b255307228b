#!/usr/bin/env bash
# test-arm64.sh: the AArch64 build's tests under user-mode QEMU on an x86-64 host (make test-arm64).
#
# For each emulated CPU of ARM64_CPUS it runs, through qemu-aarch64 -cpu CPU:
#   1. the detection check: `unmask --version` lists exactly the features that CPU has
#      (max: neon dotprod i8mm; neoverse-n1: neon dotprod; cortex-a53: neon), so each run
#      below really exercises the kernel set it is meant to;
#   2. the unit tests (build/arm64/unit_tests; ARM64_UNIT_FILTERS: substrings, all by default);
#   3. the command-line suites that need no terminal (ARM64_SUITES: tests/cli/NAME.sh);
#   4. tests/arm64/samegen.py: the bundled models generate what the x86 build generates,
#      except past a near-tie (the rule is in tests/arm64/samegen.py).
# Ends with "arm64: N passed, N failed, N skipped"; exit status non-zero if anything failed.
#
# The emulated program runs against the arm64 multiarch libraries (libc6:arm64 and
# friends, pulled in by libncurses-dev:arm64) with their own loader: `qemu-aarch64 -L
# /usr/aarch64-linux-gnu` would pair the cross toolchain's ld.so (libc6-arm64-cross) with
# the multiarch libc.so.6 when their versions differ, and the first pthread_create then
# spins for ever in glibc's stack cache (a private structure of ld.so and libc).
#
# Environment: ARM64_CPUS (default "max neoverse-n1 cortex-a53"), ARM64_UNIT_FILTERS
# (default: every unit test), ARM64_SUITES (default: every suite without a terminal),
# ARM64_UNIT_FILTERS_REST and ARM64_SUITES_REST (the same for every CPU after the first;
# default: as for the first), ARM64_X86_BIN (the x86 build to compare with; default ./unmask,
# skipped when absent).
# ARM64_TIMEOUT (default 1800; 600 with ARM64_QUICK): seconds each unit-test run, suite and samegen run may take
# under emulation before it is stopped and counted as a failure (a hang costs a clear
# failure, not the rest of CI's time; each unit test also has the runner's own watchdog).
# ARM64_QUICK=1 is CI's subset (.ci/run): the kernel-level unit tests (CPU detection, ops,
# sampler, fp16/bf16, pool, quant, matmul) on every CPU, a few quick suites on the first
# CPU only, and the x86 comparison on every CPU. Emulation runs the rest of the unit tests
# (whole forward passes, the engine, the caches) 20-50 times slower than the host.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=$ROOT/build/arm64
CPUS=${ARM64_CPUS:-max neoverse-n1 cortex-a53}
if [ "${ARM64_QUICK:-0}" = 1 ]; then
  : "${ARM64_UNIT_FILTERS:=test_cpu test_ops test_sampler test_util test_pool test_quant.c test_matmul}"
  : "${ARM64_SUITES:=basic info tokenize sudoku_model}"
  : "${ARM64_SUITES_REST:=}"
  : "${ARM64_TIMEOUT:=600}"
fi
SUITES_ALL="basic cache chat_file dgemma eval hostile_files info llada2 quantize quantize_iq quantize_tq split stream sudoku_gen sudoku_model tokenize"
SUITES=${ARM64_SUITES-$SUITES_ALL}
X86_BIN=${ARM64_X86_BIN:-$ROOT/unmask}
LIMIT=${ARM64_TIMEOUT:-1800}
passed=0; failed=0; skipped=0

command -v qemu-aarch64 >/dev/null || { echo "test-arm64: qemu-aarch64 not found (apt-get install qemu-user)"; exit 1; }
for f in unmask unit_tests sudoku-gen; do
  [ -x "$BUILD/$f" ] || { echo "test-arm64: no $BUILD/$f (make test-arm64 builds it)"; exit 1; }
done
if [ -e /lib/ld-linux-aarch64.so.1 ]; then SYSROOT=/; else SYSROOT=/usr/aarch64-linux-gnu; fi

# add the counts of a "NAME: N passed, N failed[, N skipped]" line from LOG; none: a failure
count() { local line
  line=$(grep -E '^[a-z0-9_-]+: [0-9]+ passed' "$2" | tail -n 1)
  if [ -z "$line" ]; then echo "FAIL $1 did not finish"; failed=$((failed + 1)); return; fi
  set -- $line
  passed=$((passed + $2)); failed=$((failed + $4)); skipped=$((skipped + ${6:-0})); }

log=$(mktemp); trap 'rm -f "$log"' EXIT
first=1
for cpu in $CPUS; do
  echo "== qemu-aarch64 -cpu $cpu"
  wrap=$BUILD/qemu/$cpu
  mkdir -p "$wrap"
  for f in unmask unit_tests sudoku-gen; do
    printf '#!/bin/sh\nexec qemu-aarch64 -cpu %s -L %s %s "$@"\n' "$cpu" "$SYSROOT" "$BUILD/$f" >"$wrap/$f"
    chmod +x "$wrap/$f"
  done

  # 1. the features the emulated CPU has, as unmask detects them
  case $cpu in
    max) want="neon dotprod i8mm" ;;
    neoverse-n1|neoverse-v1|cortex-a76|a64fx) want="neon dotprod" ;;
    cortex-a53|cortex-a57|cortex-a72) want="neon" ;;
    *) want="" ;;
  esac
  got=$("$wrap/unmask" --version 2>&1 | sed -n 's/^features: //p')
  if [ -z "$want" ]; then echo "skip detection on $cpu: features unknown to this script"; skipped=$((skipped + 1))
  elif [ "$got" = "$want" ]; then echo "ok   $cpu: unmask detects '$got'"; passed=$((passed + 1))
  else echo "FAIL $cpu: unmask detects '$got', the CPU has '$want'"; failed=$((failed + 1)); fi

  # 2. unit tests
  filters=${ARM64_UNIT_FILTERS:-}
  [ "$first" = 1 ] || filters=${ARM64_UNIT_FILTERS_REST-$filters}
  UNMASK_ROOT=$ROOT UNIT_TIMEOUT=$LIMIT timeout "$LIMIT" "$wrap/unit_tests" $filters >"$log" 2>&1 ||
    [ $? != 124 ] || echo "FAIL unit tests on $cpu: stopped after $LIMIT s (ARM64_TIMEOUT)" | tee -a "$log"
  grep -E '^(FAIL|    )' "$log" | grep -v '^    skipped:' | head -n 40
  count "unit tests on $cpu" "$log"
  tail -n 1 "$log" | sed "s/^/$cpu /"

  # 3. command-line suites without a terminal
  suites=$SUITES
  [ "$first" = 1 ] || suites=${ARM64_SUITES_REST-$SUITES}
  for s in $suites; do
    UNMASK_ROOT=$ROOT UNMASK_BIN=$wrap/unmask UNMASK_VARIANT=arm64 SUDOKU_GEN=$wrap/sudoku-gen \
      timeout "$LIMIT" bash "tests/cli/$s.sh" >"$log" 2>&1 ||
      [ $? != 124 ] || echo "FAIL tests/cli/$s.sh on $cpu: stopped after $LIMIT s (ARM64_TIMEOUT)" | tee -a "$log"
    grep -E '^FAIL' -A2 "$log" | head -n 20
    count "tests/cli/$s.sh on $cpu" "$log"
    tail -n 1 "$log" | sed "s/^/$cpu /"
  done

  # 4. the bundled models against the x86 build
  if [ -x "$X86_BIN" ]; then
    timeout "$LIMIT" python3 tests/arm64/samegen.py "$X86_BIN" "$wrap/unmask" >"$log" 2>&1 ||
      [ $? != 124 ] || echo "FAIL samegen on $cpu: stopped after $LIMIT s (ARM64_TIMEOUT)" | tee -a "$log"
    grep -E '^FAIL' -A3 "$log" | head -n 20
    count "samegen on $cpu" "$log"
    tail -n 1 "$log" | sed "s/^/$cpu /"
  else
    echo "skip samegen on $cpu: no x86 build at $X86_BIN"; skipped=$((skipped + 1))
  fi
  first=0
done
echo "arm64: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
