#!/usr/bin/env bash
# build-tools.sh: build bench/'s stand-alone measurement programs into build/release/:
# peak (int8 and f32 instruction peaks), stream (read bandwidth), gemm and rows (the
# matmul kernels, linked against the release library objects, built first if missing), and
# sc_precision (the self-conditioning product in FP32, BF16 and F16 against FP64).
# bench/gemm.sh, bench/rows.py and tests/cli/bench.sh call it.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s -j2 unmask >/dev/null
lib=build/release/libunmask-bench.a
objs=$(for o in $(make -s print-libobjs); do [ -f "$o" ] && echo "$o"; done)
rm -f "$lib"
# an archive: the linker takes only the objects the kernels need (no UI or CUDA libraries)
ar rcs "$lib" $objs
inc=$(make -s print-inc)
cflags="-std=c11 -D_GNU_SOURCE -O2 -g -pthread -Wall"
cc $cflags -o build/release/peak bench/peak.c
cc $cflags -o build/release/stream bench/stream.c
cc $cflags $inc -Ibench -o build/release/gemm bench/gemm.c "$lib" -lm
cc $cflags $inc -Ibench -o build/release/rows bench/rows.c "$lib" -lm
cc $cflags $inc -Ibench -o build/release/sc_precision bench/sc_precision.c "$lib" -lm
