#!/bin/sh
# gpu-check: the CUDA backend end to end (make gpu-check runs this).
#
#   1. builds unmask with nvcc (the normal Makefile build) and three harnesses:
#      build/gpu-check/kernel_check (every kernel vs its CPU reference, then timings),
#      build/gpu-check/forward_check (whole forward pass and the K/V cache's full and
#      partial passes vs the CPU backend) and build/gpu-check/engine_check (the engine with
#      --cache dual on the GPU vs the CPU backend);
#   2. runs kernel_check;
#   3. writes synthetic models (./unmask synth) for the four architectures in several
#      weight types and runs forward_check on each (GPU vs CPU fast path and reference);
#   4. a whole generation with --gpu against the CPU, without and with --cache dual, and
#      engine_check on Q8_0 models of the four architectures;
#   5. optional (GPU_CHECK_PEER=1): builds llama.cpp with -DGGML_CUDA=ON from
#      build/peer/src into build/peer-cuda (long: ~10-30 min) and prints llama-bench's
#      prompt-processing time for the same file beside forward_check's timing.
#
# Environment: CUDA_ARCHS (default "80 86 89 90"; e.g. "90" on an H100/H200 saves build
# time), GPU_CHECK_TOKENS (canvas for forward_check, default 128), GPU_CHECK_BENCH
# (a synth shape for the benchmark, e.g. llada-8b; default none), GPU_CHECK_BENCH_TYPE
# (default q4_K), GPU_CHECK_PEER=1, JOBS (make -j, default 2).
# Without nvcc or without a device it says so and exits 0 (nothing could be checked).
set -u
cd "$(dirname "$0")/../.." || exit 2
OUT=build/gpu-check
ARCHS=${CUDA_ARCHS:-80 86 89 90}
TOK=${GPU_CHECK_TOKENS:-128}
JOBS=${JOBS:-2}
pass=0
fail=0
note() { printf 'gpu-check: %s\n' "$*"; }
result() { if [ "$1" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); note "FAILED: $2"; fi; }

if ! command -v nvcc >/dev/null 2>&1; then
    note "nvcc not found: install the CUDA toolkit (and put nvcc on PATH) to build the CUDA backend; skipped"
    exit 0
fi
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
mkdir -p "$OUT"

note "building unmask with nvcc (CUDA_ARCHS=$ARCHS)"
make -j"$JOBS" CUDA_ARCHS="$ARCHS" unmask >"$OUT/make.log" 2>&1 || { tail -20 "$OUT/make.log"; note "build failed"; exit 1; }
LIBOBJ=$(make -s print-libobjs | tr ' ' '\n' | grep -v '/kernels/cuda/')
CUOBJ=$(ls build/release/kernels/cuda/*.o)
INC=$(make -s print-inc)
LIBS="$(pkg-config --libs ncursesw libutf8proc 2>/dev/null) -lm -lpthread"
GENCODE=""
for a in $ARCHS; do GENCODE="$GENCODE -gencode arch=compute_$a,code=sm_$a"; done
# shellcheck disable=SC2086
nvcc -O2 -std=c++17 $INC $GENCODE -o "$OUT/kernel_check" tests/gpu/kernel_check.cu $LIBOBJ $CUOBJ $LIBS \
    >"$OUT/nvcc.log" 2>&1 || { cat "$OUT/nvcc.log"; note "kernel_check build failed"; exit 1; }
# shellcheck disable=SC2086
cc -O2 -std=c11 -D_GNU_SOURCE $INC -o "$OUT/forward_check" tests/gpu/forward_check.c $LIBOBJ $CUOBJ \
    -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/targets/x86_64-linux/lib" -lcudart -lstdc++ -Wl,-rpath,"$CUDA_HOME/lib64" $LIBS \
    >"$OUT/cc.log" 2>&1 || { cat "$OUT/cc.log"; note "forward_check build failed"; exit 1; }
# shellcheck disable=SC2086
cc -O2 -std=c11 -D_GNU_SOURCE $INC -o "$OUT/engine_check" tests/gpu/engine_check.c $LIBOBJ $CUOBJ \
    -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/targets/x86_64-linux/lib" -lcudart -lstdc++ -Wl,-rpath,"$CUDA_HOME/lib64" $LIBS \
    >"$OUT/cc.log" 2>&1 || { cat "$OUT/cc.log"; note "engine_check build failed"; exit 1; }

desc=$("$OUT/kernel_check" --probe)
if [ $? -ne 0 ]; then
    note "$desc"
    note "everything built; no CUDA device here, so no kernel ran (skipped)"
    exit 0
fi
note "device: $desc"

note "kernels against their CPU references"
"$OUT/kernel_check"
result $? "kernel_check"

note "whole forward passes against the CPU backend ($TOK tokens)"
for spec in tiny-llada:q8_0 tiny-llada:q4_K tiny-llada:f16 tiny-llada:bf16 tiny-llada:f32 tiny-dream:q6_K \
            tiny-dream:q5_K tiny-llada-moe:q8_0 tiny-llada-moe:q4_0 tiny-rnd1:q4_K tiny-rnd1:iq4_xs; do
    shape=${spec%%:*}
    type=${spec#*:}
    f="$OUT/$shape-$type.gguf"
    ./unmask synth --shape "$shape" --type "$type" -o "$f" >/dev/null 2>"$OUT/synth.log" ||
        { cat "$OUT/synth.log"; result 1 "synth $spec"; continue; }
    "$OUT/forward_check" "$f" --tokens "$TOK"
    result $? "forward $spec"
done

if ./unmask generate --help 2>&1 | grep -q -- '--gpu'; then
    note "whole generation: --gpu against the CPU (greedy)"
    f="$OUT/tiny-llada-q8_0.gguf"
    ./unmask generate -m "$f" -p "hello" --gen 32 --steps 8 --temp 0 >"$OUT/gen-cpu.txt" 2>"$OUT/gen-cpu.err"
    r1=$?
    ./unmask generate -m "$f" -p "hello" --gen 32 --steps 8 --temp 0 --gpu >"$OUT/gen-gpu.txt" 2>"$OUT/gen-gpu.err"
    r2=$?
    if [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && cmp -s "$OUT/gen-cpu.txt" "$OUT/gen-gpu.txt"; then result 0 "generate"
    else
        cat "$OUT/gen-gpu.err"
        note "generation differs (greedy decoding can diverge on near-ties; see $OUT/gen-*.txt)"
        result 1 "generate --gpu vs cpu"
    fi
    # partial passes over the K/V cache: the same generation with --cache dual on both
    ./unmask generate -m "$f" -p "hello" --gen 32 --steps 8 --temp 0 --cache dual >"$OUT/gen-cpu-dual.txt" 2>"$OUT/gen-cpu-dual.err"
    r1=$?
    ./unmask generate -m "$f" -p "hello" --gen 32 --steps 8 --temp 0 --cache dual --gpu >"$OUT/gen-gpu-dual.txt" \
        2>"$OUT/gen-gpu-dual.err"
    r2=$?
    if [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && cmp -s "$OUT/gen-cpu-dual.txt" "$OUT/gen-gpu-dual.txt"; then result 0 "generate --cache dual"
    else
        cat "$OUT/gen-gpu-dual.err"
        note "generation with --cache dual differs (see $OUT/gen-*-dual.txt)"
        result 1 "generate --gpu --cache dual vs cpu"
    fi
    # the engine with --cache dual, token agreement bounds as in emu-check
    for spec in tiny-llada:90 tiny-dream:90 tiny-llada-moe:75 tiny-rnd1:90; do
        shape=${spec%%:*}
        ef="$OUT/$shape-q8_0.gguf"
        [ -f "$ef" ] || ./unmask synth --shape "$shape" --type q8_0 -o "$ef" >/dev/null 2>"$OUT/synth.log" ||
            { cat "$OUT/synth.log"; result 1 "synth $shape q8_0"; continue; }
        "$OUT/engine_check" "$ef" --min-agree "${spec#*:}"
        result $? "engine_check $shape q8_0"
    done
else
    note "unmask generate has no --gpu flag yet: whole-generation check skipped"
fi

if [ -n "${GPU_CHECK_BENCH:-}" ]; then
    btype=${GPU_CHECK_BENCH_TYPE:-q4_K}
    bf="$OUT/bench-$GPU_CHECK_BENCH-$btype.gguf"
    [ -f "$bf" ] || ./unmask synth --shape "$GPU_CHECK_BENCH" --type "$btype" -o "$bf" >/dev/null
    note "benchmark: $GPU_CHECK_BENCH $btype, 256 tokens"
    "$OUT/forward_check" "$bf" --tokens 256 --no-ref --reps 5
    result $? "bench forward $GPU_CHECK_BENCH"
    if [ "${GPU_CHECK_PEER:-0}" = 1 ]; then
        if [ ! -x build/peer-cuda/bin/llama-bench ]; then
            if [ -d build/peer/src ]; then
                note "building llama.cpp with CUDA (long)"
                cmake -S build/peer/src -B build/peer-cuda -DGGML_CUDA=ON -DLLAMA_CURL=OFF \
                    -DCMAKE_CUDA_ARCHITECTURES="$(echo "$ARCHS" | tr ' ' ';')" >"$OUT/peer.log" 2>&1 &&
                    cmake --build build/peer-cuda -j"$JOBS" --target llama-bench >>"$OUT/peer.log" 2>&1 ||
                    note "llama.cpp CUDA build failed (see $OUT/peer.log)"
            else
                note "build/peer/src missing (make peer): no llama.cpp comparison"
            fi
        fi
        if [ -x build/peer-cuda/bin/llama-bench ]; then
            note "llama.cpp CUDA (llama-bench prompt processing, 256 tokens, all layers on the GPU)"
            build/peer-cuda/bin/llama-bench -m "$bf" -p 256 -n 0 -ngl 99 -r 5
        fi
    else
        note "llama.cpp CUDA comparison off (GPU_CHECK_PEER=1 builds it: long)"
    fi
fi

note "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
